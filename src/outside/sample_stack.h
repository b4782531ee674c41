// One sample's stack as the process table keeps it: its leaf and its
// callers (call sites, innermost first), unwound from the registers and the
// stack copy the kernel wrote (unwind/), with the kernel's call chain under
// it where the sample has one (issue 33).
//
// NOT async-signal-safe: host side, the reader thread's (the process
// table's, under the sampler's lock).
#ifndef PROFIL_OUTSIDE_SAMPLE_STACK_H
#define PROFIL_OUTSIDE_SAMPLE_STACK_H

#include <sys/types.h>

#include <cstdint>
#include <vector>

#include "outside/mappings.h"
#include "perf/records.h"

namespace profiling::outside {

struct SampleStack {
  uint64_t leaf = 0;
  std::vector<uint64_t> callers;
  bool truncated = false;  // the unwind stopped before the stack's root
  // The kernel addresses among leaf and callers, for naming them
  // (kernel_symbols.h).
  std::vector<uint64_t> kernel_frames;
};

// What the process table counts a sample under: its leaf, its callers (a
// stack table's id), its thread, its GIL state; hashed, not ordered (issue 32: a map's
// compares were a tenth of the reader's own work per sample; a profile's
// samples are sorted when it is written, format::coalesce_samples).
struct SampleKey {
  uint64_t leaf = 0;
  uint32_t stack = 0;
  pid_t tid = 0;
  uint8_t gil = 0;  // whether the thread held CPython's GIL (format::kGil*, issue 31)
  bool operator==(const SampleKey&) const = default;
  struct Hash {
    size_t operator()(const SampleKey& k) const {
      return (k.leaf * 0x9E3779B97F4A7C15ull) ^ (uint64_t{k.stack} << 32 | static_cast<uint32_t>(k.tid)) ^
             (uint64_t{k.gil} << 24);
    }
  };
};

// kernel: the sample was taken in the kernel (its user registers are the
// system call's caller's). Without a kernel call chain such a sample's
// leaf is format::kKernelAddress ("[kernel]").
SampleStack unwind_sample(const perf::Sample& s, bool kernel, CodeMap& code, uint32_t max_depth);

}  // namespace profiling::outside

#endif  // PROFIL_OUTSIDE_SAMPLE_STACK_H
