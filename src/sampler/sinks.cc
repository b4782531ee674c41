// ASYNC-SIGNAL-SAFE: everything in this file runs in the sampling signal
// handler. No allocation, no locks, no stdio; buffers are touched only
// through safe_access.S.
#include "sampler/sinks.h"

#include "sampler/safe_access.h"

namespace profiling::sampler {

std::atomic<HistogramTable*> g_histogram{nullptr};
std::atomic<PcBuffer*> g_pc_buffer{nullptr};
std::atomic<PcTable*> g_pc_table{nullptr};
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

inline void deliver_histogram(HistogramTable* table, uint64_t pc, uint32_t weight) {
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
  if (result == kSafeAccessFault) [[unlikely]] {
    g_stats.buffer_faults.fetch_add(1, std::memory_order_relaxed);
    g_stats.dropped.fetch_add(weight, std::memory_order_relaxed);
    HistogramTable* expected = table;
    g_histogram.compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel);
  } else if (result == kSafeAccessAtLimit && table->limit == BinLimit::stop_at_32767) {
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
    if (profil_safe_store_u64(buffer->samples + used + i, pc) == kSafeAccessFault) {
      g_stats.buffer_faults.fetch_add(1, std::memory_order_relaxed);
      PcBuffer* expected = buffer;
      g_pc_buffer.compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel);
      return;
    }
  }
}

}  // namespace

void deliver(uint64_t pc, uint32_t weight) {
  g_stats.signals.fetch_add(1, std::memory_order_relaxed);
  g_stats.ticks.fetch_add(weight, std::memory_order_relaxed);
  if (HistogramTable* table = g_histogram.load(std::memory_order_acquire))
    deliver_histogram(table, pc, weight);
  if (PcBuffer* buffer = g_pc_buffer.load(std::memory_order_acquire)) [[unlikely]]
    deliver_pc_buffer(buffer, pc, weight);
  if (PcTable* table = g_pc_table.load(std::memory_order_acquire)) [[unlikely]]
    table->add(pc, weight);
}

}  // namespace profiling::sampler
