// ASYNC-SIGNAL-SAFE (python_walk.h): no allocation, no lock, no stdio, no
// exception; the frame buffer is on the stack.
#include "interp/python_walk.h"

#include <cstring>

namespace profiling::interp {
WalkResult walk_python_frames(const PythonLayout& layout, MemoryReader& memory, uint64_t thread_state, RawFrame* out,
                              uint32_t capacity) {
  WalkResult result;
  if (layout.frame_size <= 0 || layout.frame_size > kMaxPythonFrameRead) {
    result.status = WalkStatus::kReadError;
    return result;
  }
  uint64_t frame = 0;
  if (!read_u64(memory, thread_state + layout.tstate_frame, &frame)) {
    result.status = WalkStatus::kReadError;
    return result;
  }
  if (layout.cframe_current_frame >= 0 && frame != 0 &&
      !read_u64(memory, frame + layout.cframe_current_frame, &frame)) {
    result.status = WalkStatus::kReadError;
    return result;
  }
  const bool shims = layout.owner_cstack >= 0 && layout.frame_owner >= 0;
  // A chain read while the thread changes it may loop: shims are at most
  // one per frame given out, so a longer walk is not a stack.
  const uint64_t step_limit = 2ull * capacity + 16;
  uint8_t bytes[kMaxPythonFrameRead];
  for (uint64_t steps = 0; frame != 0; ++steps) {
    if (steps == step_limit) {
      result.status = WalkStatus::kLoop;
      return result;
    }
    if (!memory.read(frame, bytes, static_cast<size_t>(layout.frame_size))) {
      result.status = WalkStatus::kReadError;
      return result;
    }
    const uint64_t back = u64_at(bytes, layout.frame_back);
    if (shims && static_cast<int8_t>(bytes[layout.frame_owner]) == layout.owner_cstack) {
      if (result.count > 0) out[result.count - 1].flags |= kEntryFrame;
      frame = back;
      continue;
    }
    if (result.count == capacity) {
      result.status = WalkStatus::kTruncated;
      return result;
    }
    RawFrame& raw = out[result.count++];
    raw.code = u64_at(bytes, layout.frame_code);
    raw.flags = 0;
    if (layout.model == PythonFrameModel::kFrameObject) {
      int32_t lasti;
      std::memcpy(&lasti, bytes + layout.frame_instruction, sizeof lasti);
      raw.instruction = static_cast<uint64_t>(static_cast<int64_t>(lasti));
      raw.flags = kEntryFrame;
    } else {
      raw.instruction = u64_at(bytes, layout.frame_instruction);
      if (layout.frame_is_entry >= 0 && bytes[layout.frame_is_entry] != 0) raw.flags = kEntryFrame;
    }
    frame = back;
  }
  return result;
}

}  // namespace profiling::interp
