// ASYNC-SIGNAL-SAFE (ruby_walk.h).
#include "interp/ruby_walk.h"

#include <cstring>

namespace profiling::interp {
namespace {

// A VM stack size read past this is not one (Ruby's default is 1 MiB,
// RUBY_THREAD_VM_STACK_SIZE).
constexpr uint64_t kMaxStackBytes = 64u << 20;

}  // namespace

WalkResult walk_ruby_frames(const RubyLayout& layout, MemoryReader& memory, uint64_t ec, RawFrame* out,
                            uint32_t capacity) {
  WalkResult result;
  uint8_t context[24];
  if (ec == 0 || !memory.read(ec, context, sizeof context)) {
    result.status = WalkStatus::kReadError;
    return result;
  }
  const uint64_t stack = u64_at(context, layout.ec_vm_stack), size = u64_at(context, layout.ec_vm_stack_size);
  uint64_t cfp = u64_at(context, layout.ec_cfp);
  if (stack == 0 || size > kMaxStackBytes / 8) {
    result.status = WalkStatus::kReadError;
    return result;
  }
  // Control frames sit at the VM stack's end, the outermost last.
  const uint64_t end = stack + size * 8;
  if (cfp < stack || cfp > end) {
    result.status = WalkStatus::kReadError;
    return result;
  }
  uint8_t frame[64];
  const uint32_t frame_size = layout.cfp_size < sizeof frame ? layout.cfp_size : sizeof frame;
  for (; cfp + layout.cfp_size <= end; cfp += layout.cfp_size) {
    uint64_t flags = 0;
    if (!memory.read(cfp, frame, frame_size) ||
        !memory.read(u64_at(frame, layout.cfp_ep), &flags, sizeof flags)) {
      result.status = WalkStatus::kReadError;
      return result;
    }
    if ((flags & layout.frame_magic_mask) == layout.frame_magic_dummy) continue;
    if (flags & layout.frame_flag_cframe) continue;
    const uint64_t pc = u64_at(frame, layout.cfp_pc), iseq = u64_at(frame, layout.cfp_iseq);
    if (pc == 0 || iseq == 0) continue;
    if (result.count == capacity) {
      result.status = WalkStatus::kTruncated;
      return result;
    }
    out[result.count++] = RawFrame{iseq, pc, (flags & layout.frame_flag_finish) ? uint32_t{kEntryFrame} : 0u};
  }
  return result;
}

}  // namespace profiling::interp
