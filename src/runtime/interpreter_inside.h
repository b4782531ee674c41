// What the preload's dump does alike for every runtime whose frames the
// sampling handler stores after a stack (sampler/python_sampling.h's
// format: CPython's, runtime/python_inside.h; Ruby's, runtime/ruby_inside.h,
// issue 34): the table that gives each (code, line) its frame id, and the
// merge of a stored stack's frames into its native stack by
// interp/python_merge.h's rule.
//
// ASYNC-SIGNAL-SAFE: FrameIds and merge_stored_frames (fixed memory, one
// dump at a time: the arrays they use are the dump's alone).
// sample_on_the_sampled_thread is host side (the preload's start).
#ifndef PROFIL_RUNTIME_INTERPRETER_INSIDE_H
#define PROFIL_RUNTIME_INTERPRETER_INSIDE_H

#include <cstddef>
#include <cstdint>

#include "interp/python_merge.h"
#include "runtime/profraw_sources.h"

namespace profiling::runtime {

inline uint64_t mix_bits(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return x;
}

// The entry for address in an open-addressed table of entries with an
// `address` member (0: an empty slot), claimed (value-initialised, its
// address set) when it is not there yet; nullptr when half the table was
// probed without finding either (the table is full: left unnamed).
// *claimed says whether it was claimed now, for the caller to name it.
template <typename Entry, size_t kSlots>
Entry* find_or_claim(Entry (&slots)[kSlots], uint64_t address, uint32_t* slot_out, bool* claimed) {
  size_t slot = mix_bits(address) & (kSlots - 1);
  for (size_t probe = 0; probe < kSlots / 2; ++probe, slot = (slot + 1) & (kSlots - 1)) {
    Entry& entry = slots[slot];
    if (entry.address != address && entry.address != 0) continue;
    *slot_out = static_cast<uint32_t>(slot);
    *claimed = entry.address == 0;
    if (*claimed) {
      entry = Entry{};
      entry.address = address;
    }
    return &entry;
  }
  return nullptr;
}

struct FrameName {
  uint64_t code;  // 0: an empty slot
  int32_t line;
  uint32_t id;
  uint32_t code_slot;  // the runtime's own table's slot of the code
};

// Frame ids by (code, line), ids given out from `first` + 1 on.
template <size_t kSlots>
struct FrameIds {
  // The arrays are left as the memory holds them: the tables are mapped
  // zeroed (untouched pages cost nothing).
  explicit FrameIds(uint32_t first) : ids(first) {}
  FrameName frames[kSlots];
  uint32_t frame_of_id[kSlots / 2];
  uint32_t ids;  // the last given out

  // The id of (code, line), given out the first time; 0 when the table is full.
  uint32_t id_of(uint64_t code, int32_t line, uint32_t code_slot) {
    size_t slot = mix_bits(code * 31 + static_cast<uint64_t>(line)) & (kSlots - 1);
    for (size_t probe = 0; probe < kSlots / 2; ++probe, slot = (slot + 1) & (kSlots - 1)) {
      FrameName& frame = frames[slot];
      if (frame.code == code && frame.line == line) return frame.id;
      if (frame.code != 0) continue;
      if (ids + 1 >= kSlots / 2) return 0;
      frame = FrameName{code, line, ++ids, code_slot};
      frame_of_id[frame.id] = static_cast<uint32_t>(slot);
      return frame.id;
    }
    return 0;
  }
  const FrameName& frame(uint32_t id) const { return frames[frame_of_id[id]]; }
};

// The address one stored frame is shown at (its code, its instruction or pc).
using NameStoredFrame = uint64_t (*)(uint64_t code, uint64_t instruction);

// Forwards the stored stack pcs[0..depth) to inner with its runtime frames
// named by name and merged at the sample (python_merge.h) with loop as the
// evaluation loop, misfits at base, calls entered or left at between, with
// the GIL's state its marker holds (python_sampling.h); a stack without
// frames is forwarded as it is, the GIL unknown. native_truncated: a cut
// native stack keeps the outer frames past its end (python_merge.h).
void merge_stored_frames(StackVisitor& inner, const uint64_t* pcs, uint32_t depth, bool truncated, uint64_t weight,
                         int32_t tid, uint32_t observations, NameStoredFrame name, interp::EvalLoop loop,
                         uint64_t base, uint64_t between, bool native_truncated);

// On the `auto` clock, samples on perf-signal (the handler must run on the
// sampled thread to read its frames: the perf ring's records are drained
// later, by whichever thread). Host side.
void sample_on_the_sampled_thread();

}  // namespace profiling::runtime

#endif  // PROFIL_RUNTIME_INTERPRETER_INSIDE_H
