// ASYNC-SIGNAL-SAFE (python_merge.h): arrays of the caller's only.
#include "interp/python_merge.h"

namespace profiling::interp {

MergeResult merge_python_frames(const uint64_t* native, uint32_t native_count, const RawFrame* raw,
                                const uint64_t* python, WalkResult walk, EvalLoop loop, uint64_t misfit_address,
                                uint64_t* out, uint32_t capacity, bool at_sample, uint64_t between_address,
                                bool native_truncated) {
  MergeResult result;
  uint32_t n = 0;
  auto put = [&](uint64_t address) {
    if (n < capacity) out[n++] = address;
  };
  uint32_t next = 0;  // the innermost Python frame not placed yet
  bool fits = walk.status == WalkStatus::kComplete;
  bool any_loop = false;
  // At the sample, the innermost loop call entering or leaving its frame
  // (python_merge.h): one loop call more than entry frames.
  bool unstarted = false;
  if (at_sample) {
    uint32_t loops = 0, entries = 0;
    for (uint32_t k = 0; k < native_count; ++k) loops += loop.contains(native[k]) ? 1 : 0;
    for (uint32_t i = 0; i < walk.count; ++i) entries += (raw[i].flags & kEntryFrame) ? 1 : 0;
    unstarted = loops == entries + 1;
  }
  for (uint32_t k = 0; k < native_count; ++k) {
    const uint64_t address = native[k];
    if (unstarted && loop.contains(address)) {
      unstarted = false;
      any_loop = true;
      if (between_address != 0) put(between_address);
      put(address);
      continue;
    }
    if (loop.contains(address)) {
      any_loop = true;
      // This call of the loop ran the frames up to and including the next
      // entry frame (frames.h).
      const uint32_t first = next;
      while (next < walk.count && !(raw[next].flags & kEntryFrame)) ++next;
      if (next < walk.count) ++next;    // the entry frame itself
      if (first == next) fits = false;  // a loop call without frames left
      for (uint32_t i = first; i < next; ++i)
        if (python[i] != 0) put(python[i]);
    }
    put(address);
  }
  if (!any_loop) fits = true;              // nothing to merge into: the native stack as it is
  else if (next < walk.count && native_truncated)  // frames of loop calls the cut stack lost
    for (; next < walk.count; ++next) {
      if (python[next] != 0) put(python[next]);
    }
  else if (next < walk.count) fits = false;  // frames no loop call took
  if (fits) {
    result.count = n;
    result.fits = true;
    return result;
  }
  // Not the stack the native one was in: never merged, but said in every
  // view, as a frame of its own just inside the innermost loop frame.
  n = 0;
  bool marked = false;
  for (uint32_t k = 0; k < native_count; ++k) {
    if (!marked && loop.contains(native[k])) {
      put(misfit_address);
      marked = true;
    }
    put(native[k]);
  }
  result.count = n;
  return result;
}

}  // namespace profiling::interp
