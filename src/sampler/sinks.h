// What the signal handler counts into, and how it counts.
//
// ASYNC-SIGNAL-SAFE: deliver() and everything it reaches. The published
// objects are immutable once installed; control.cc replaces them with the
// protocol described there (swap the pointer, wait for handlers in flight,
// free outside the handler).
#ifndef PROFIL_SAMPLER_SINKS_H
#define PROFIL_SAMPLER_SINKS_H

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "sampler/bins.h"
#include "sampler/pc_table.h"
#include "unwind/code_table.h"
#include "unwind/memory.h"
#include "unwind/stack_table.h"
#include "unwind/unwinder.h"

namespace profiling::sampler {

// An address range resolved to the region that owns it (regions may overlap;
// control.cc splits them so segments never do).
struct Segment {
  uint64_t start;
  uint64_t end;  // exclusive
  uint32_t region;
};

// The common case resolved up front — one segment (profil(): one region)
// counted with saturation — so that a sample costs a range check, a shift
// and the bin's add (DESIGN.md §5: at most 60 instructions in the handler
// for one region; bench/sampler.sh counts them). bin_index() for the
// region is, with a power-of-two scale 2^k,
//   (pc - offset) >> shift,   shift = pc_shift + scale_shift - k
// and otherwise
//   v = (pc - offset) >> pc_shift;
//   (v >> scale_shift) * scale + ((v & low_mask) * scale >> scale_shift)
// with pc_shift 1 (16-bit bins) or 2 (32-bit, glibc's PROF_UINT) and
// scale_shift 16 for the printed formula, 0 and 17 for illumos's.
struct FastSegment {
  uint64_t start = 0;
  uint64_t length = 0;  // 0: no fast path, every sample takes the general one
  uint64_t offset = 0;
  void* bins = nullptr;
  uint64_t nbins = 0;
  uint64_t low_mask = 0;
  uint32_t scale = 0;
  uint8_t shift = 0;  // the power-of-two scale's one shift
  bool power_of_two = false;
  uint8_t pc_shift = 0;
  uint8_t scale_shift = 0;
  bool u32 = false;
};

// Fills table->fast from its one segment and region when the fast path
// applies (one segment, saturating bins); leaves it empty otherwise.
struct HistogramTable;
void prepare_fast_segment(HistogramTable* table);

struct HistogramTable {
  FastSegment fast;
  const Segment* segments = nullptr;  // sorted by start, disjoint
  size_t segment_count = 0;
  const Region* regions = nullptr;
  size_t region_count = 0;
  Region overflow{};
  bool has_overflow = false;
  BinLimit limit = BinLimit::saturate;
};

struct PcBuffer {
  uint64_t* samples = nullptr;
  size_t capacity = 0;
  std::atomic<size_t> used{0};
};

// The installed sinks; null when absent.
extern std::atomic<HistogramTable*> g_histogram;
extern std::atomic<PcBuffer*> g_pc_buffer;
extern std::atomic<PcTable*> g_pc_table;
// Whole stacks (sampler.h, set_stack_table): the table they go to, the
// unwind tables of the loaded code (replaced after a dlopen with the same
// protocol) and the depth limit.
extern std::atomic<unwind::StackTable*> g_stack_table;
extern std::atomic<const unwind::CodeTable*> g_code_table;
extern std::atomic<uint32_t> g_stack_depth;
// Handlers currently between reading a sink pointer and finishing with it.
extern std::atomic<uint32_t> g_handlers_in_flight;

struct AtomicStats {
  std::atomic<uint64_t> signals{0};
  std::atomic<uint64_t> ticks{0};
  std::atomic<uint64_t> dropped{0};
  std::atomic<uint64_t> buffer_faults{0};
};
extern AtomicStats g_stats;

// Counts one sample of `weight` ticks at pc into every installed sink.
// A sink whose buffer faults, or (Solaris) whose bin reaches 32767, is
// uninstalled here; control.cc frees it later.
void deliver(uint64_t pc, uint32_t weight);

// Unwinds the stack of the interrupted context (a ucontext_t) and adds it
// with weight to table, as the calling thread's (thread_names.h).
void deliver_stack(unwind::StackTable* table, const void* context, uint32_t weight);
// The same from registers and memory taken elsewhere: a perf ring record's
// registers and copy of the stack (perf_ring.cc), of the thread tid the
// record names. Returns the walk's result.
unwind::Stack deliver_unwound_stack(unwind::StackTable* table, const unwind::MemoryReader& memory, unwind::Registers regs,
                           uint32_t weight, int32_t tid);

}  // namespace profiling::sampler

#endif  // PROFIL_SAMPLER_SINKS_H
