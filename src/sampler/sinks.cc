// ASYNC-SIGNAL-SAFE: everything in this file runs in the sampling signal
// handler. No allocation, no locks, no stdio; buffers are touched only
// through safe_access.S.
#include "sampler/sinks.h"

#include "base/safe_access.h"
#include "sampler/python_sampling.h"
#include "sampler/ruby_sampling.h"
#include "sampler/sampler.h"
#include "sampler/thread_names.h"
#include "unwind/unwinder.h"

// The bin could not be written (its memory went away): the histogram is
// turned off and the sample counted as dropped. Reached from the general
// path below and from the fast path's landing pad (safe_access.S).
extern "C" __attribute__((visibility("hidden"), noinline)) void profil_histogram_fault(
    profiling::sampler::HistogramTable* table, uint32_t weight) {
  using namespace profiling::sampler;
  g_stats.buffer_faults.fetch_add(1, std::memory_order_relaxed);
  g_stats.dropped.fetch_add(weight, std::memory_order_relaxed);
  HistogramTable* expected = table;
  g_histogram.compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel);
}

namespace profiling::sampler {

std::atomic<HistogramTable*> g_histogram{nullptr};
std::atomic<PcBuffer*> g_pc_buffer{nullptr};
std::atomic<PcTable*> g_pc_table{nullptr};
std::atomic<unwind::StackTable*> g_stack_table{nullptr};
std::atomic<const unwind::CodeTable*> g_code_table{nullptr};
std::atomic<uint32_t> g_stack_depth{unwind::kDefaultMaxDepth};
std::atomic<uint32_t> g_handlers_in_flight{0};
AtomicStats g_stats;

namespace {

const Segment* find_segment(const HistogramTable& table, uint64_t pc) {
  if (table.segment_count == 1) {  // profil(): one region, no search
    const Segment& s = table.segments[0];
    return pc >= s.start && pc < s.end ? &s : nullptr;
  }
  size_t lo = 0, hi = table.segment_count;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    const Segment& s = table.segments[mid];
    if (pc < s.start)
      hi = mid;
    else if (pc >= s.end)
      lo = mid + 1;
    else
      return &s;
  }
  return nullptr;
}

// Returns the safe_access result for the bin, or 0 when pc maps to no bin.
int count_in_region(const Region& region, uint64_t bin, uint32_t weight, uint32_t limit) {
  if (bin >= region.nbins) return 0;
  if (region.width == BinWidth::u32)
    return profil_safe_add_u32(static_cast<uint32_t*>(region.bins) + bin, weight,
                               limit == 0xffffu ? 0xffffffffu : limit);
  return profil_safe_add_u16(static_cast<uint16_t*>(region.bins) + bin, weight, limit);
}

__attribute__((noinline)) void deliver_histogram(HistogramTable* table, uint64_t pc, uint32_t weight) {
  const uint32_t limit = table->limit == BinLimit::stop_at_32767 ? 32767u : 0xffffu;
  int result = 0;
  if (const Segment* seg = find_segment(*table, pc)) {
    const Region& r = table->regions[seg->region];
    result = count_in_region(r, bin_index(pc, r), weight, limit);
  } else if (table->has_overflow) {
    result = count_in_region(table->overflow, 0, weight, limit);
  } else {
    return;  // outside every region: not counted (never wrapped into a bin)
  }
  if (result == base::kSafeAccessFault) [[unlikely]] {
    profil_histogram_fault(table, weight);
  } else if (result == base::kSafeAccessAtLimit && table->limit == BinLimit::stop_at_32767) {
    HistogramTable* expected = table;  // Solaris: profiling stops
    g_histogram.compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel);
  }
}

__attribute__((noinline)) void deliver_pc_buffer(PcBuffer* buffer, uint64_t pc, uint32_t weight) {
  // One PC per tick: a sample standing for several ticks fills several slots.
  size_t used = buffer->used.load(std::memory_order_relaxed);
  size_t take;
  do {
    if (used >= buffer->capacity) {
      g_stats.dropped.fetch_add(weight, std::memory_order_relaxed);
      return;
    }
    take = buffer->capacity - used < weight ? buffer->capacity - used : weight;
  } while (!buffer->used.compare_exchange_weak(used, used + take, std::memory_order_acq_rel));
  for (size_t i = 0; i < take; ++i) {
    if (profil_safe_store_u64(buffer->samples + used + i, pc) == base::kSafeAccessFault) {
      g_stats.buffer_faults.fetch_add(1, std::memory_order_relaxed);
      PcBuffer* expected = buffer;
      g_pc_buffer.compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel);
      return;
    }
  }
}

}  // namespace

void prepare_fast_segment(HistogramTable* table) {
  table->fast = FastSegment{};
  if (table->segment_count != 1 || table->limit != BinLimit::saturate) return;
  const Segment& segment = table->segments[0];
  const Region& region = table->regions[segment.region];
  FastSegment fast;
  fast.start = segment.start;
  fast.length = segment.end - segment.start;
  fast.offset = region.offset;
  fast.bins = region.bins;
  fast.nbins = region.nbins;
  fast.scale = region.scale;
  fast.u32 = region.width == BinWidth::u32;
  if (region.arithmetic == BinArithmetic::illumos) {
    fast.pc_shift = 0;
    fast.scale_shift = 17;
  } else {
    fast.pc_shift = fast.u32 ? 2 : 1;
    fast.scale_shift = 16;
  }
  fast.low_mask = (uint64_t{1} << fast.scale_shift) - 1;
  if (region.scale != 0 && (region.scale & (region.scale - 1)) == 0) {
    fast.power_of_two = true;
    fast.shift = static_cast<uint8_t>(fast.pc_shift + fast.scale_shift - __builtin_ctz(region.scale));
  }
  table->fast = fast;
}

namespace {

// The rare sinks (pcsample()'s buffer, profil run's table), then the
// histogram by the general path: out of deliver(), so that its fast path
// keeps nothing live across a call.
__attribute__((noinline)) void deliver_with_pc_sinks(uint64_t pc, uint32_t weight) {
  if (PcBuffer* buffer = g_pc_buffer.load(std::memory_order_acquire)) deliver_pc_buffer(buffer, pc, weight);
  if (PcTable* table = g_pc_table.load(std::memory_order_acquire)) table->add(pc, weight);
  if (HistogramTable* table = g_histogram.load(std::memory_order_acquire)) deliver_histogram(table, pc, weight);
}

}  // namespace

// Out of line: the frames live on the signal stack only when stacks are on,
// and only as many as the limit asks (1 KiB at the default 128): a
// program's own alternate signal stack may be small (SIGSTKSZ, 8 KiB).
__attribute__((noinline)) unwind::Stack deliver_unwound_stack(unwind::StackTable* table,
                                                              const unwind::MemoryReader& memory,
                                                              unwind::Registers regs, uint32_t weight,
                                                              int32_t tid) {
  uint32_t depth = g_stack_depth.load(std::memory_order_relaxed);
  if (depth > kMaxStackDepth) depth = kMaxStackDepth;
  auto* pcs = static_cast<uint64_t*>(__builtin_alloca(depth * sizeof(uint64_t)));
  const unwind::Stack stack = unwind::unwind(g_code_table.load(std::memory_order_acquire), memory, regs, pcs, depth);
  table->add(pcs, stack.depth, stack.truncated, weight, tid);
  return stack;
}

void deliver_stack(unwind::StackTable* table, const void* context, uint32_t weight) {
  // A CPython process (python_sampling.h): its Python frames too; a Ruby
  // one (ruby_sampling.h), its Ruby frames. Two loads and two branches for
  // every other process.
  if (const PythonSampling* python = g_python.load(std::memory_order_acquire)) [[unlikely]] {
    deliver_stack_with_python(*python, table, context, weight);
    return;
  }
  if (const RubySampling* ruby = g_ruby.load(std::memory_order_acquire)) [[unlikely]] {
    deliver_stack_with_ruby(*ruby, table, context, weight);
    return;
  }
  const unwind::LiveMemory memory;
  deliver_unwound_stack(table, memory, unwind::registers_from_ucontext(context), weight, current_thread_id());
}

void deliver(uint64_t pc, uint32_t weight) {
  g_stats.signals.fetch_add(1, std::memory_order_relaxed);
  g_stats.ticks.fetch_add(weight, std::memory_order_relaxed);
  if (g_pc_buffer.load(std::memory_order_relaxed) != nullptr || g_pc_table.load(std::memory_order_relaxed) != nullptr)
      [[unlikely]] {
    deliver_with_pc_sinks(pc, weight);
    return;
  }
  HistogramTable* table = g_histogram.load(std::memory_order_acquire);
  if (table == nullptr) return;
  const FastSegment& fast = table->fast;
  if (pc - fast.start >= fast.length) [[unlikely]] {
    deliver_histogram(table, pc, weight);  // several regions, the overflow bin, Solaris's limit
    return;
  }
  uint64_t bin;
  if (fast.power_of_two) [[likely]] {
    bin = (pc - fast.offset) >> fast.shift;
  } else {
    const uint64_t v = (pc - fast.offset) >> fast.pc_shift;
    bin = (v >> fast.scale_shift) * fast.scale + (((v & fast.low_mask) * fast.scale) >> fast.scale_shift);
  }
  if (bin >= fast.nbins) [[unlikely]] return;  // cannot happen inside the segment; never write past the bins
  // Last, as a jump: a fault there ends in profil_histogram_fault(table, weight).
  if (fast.u32)
    profil_safe_count_u32(static_cast<uint32_t*>(fast.bins) + bin, weight, table);
  else
    profil_safe_count_u16(static_cast<uint16_t*>(fast.bins) + bin, weight, table);
}

}  // namespace profiling::sampler
