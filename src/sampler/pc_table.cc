// ASYNC-SIGNAL-SAFE: add() and for_each() (see pc_table.h); create/destroy/
// clear are setup-time only.
#include "sampler/pc_table.h"

#include <new>

#include "base/mapped_table.h"

namespace profiling::sampler {

namespace {
// Fibonacci hashing: code addresses are clustered and 16-byte aligned, so the
// low bits alone would pile them into a few slots.
inline size_t slot_of(uint64_t pc, size_t mask) {
  return static_cast<size_t>((pc * 0x9E3779B97F4A7C15ull) >> 20) & mask;
}
}  // namespace

PcTable* PcTable::create(size_t capacity) {
  const size_t slots = base::round_up_pow2(capacity < 64 ? 64 : capacity);
  size_t bytes = 0;
  void* memory = base::map_table<PcTable>(slots * sizeof(Entry), &bytes);
  if (memory == nullptr) return nullptr;
  auto* table = new (memory) PcTable();
  table->mask_ = slots - 1;
  table->mapped_bytes_ = bytes;
  table->entries_ = reinterpret_cast<Entry*>(base::mapped_arrays(table));
  return table;
}

void PcTable::destroy(PcTable* table) {
  if (table != nullptr) base::destroy_mapped(table, table->mapped_bytes_);
}

void PcTable::add(uint64_t pc, uint64_t weight) {
  if (pc == 0) pc = 1;  // 0 marks an empty slot; address 0 never holds code
  size_t slot = slot_of(pc, mask_);
  // Linear probing, bounded so a full table costs a bounded time per sample.
  for (size_t probe = 0; probe <= mask_ && probe < 64; ++probe) {
    Entry& e = entries_[slot];
    uint64_t seen = e.pc.load(std::memory_order_acquire);
    if (seen == 0) {
      uint64_t expected = 0;
      if (e.pc.compare_exchange_strong(expected, pc, std::memory_order_acq_rel)) {
        used_.fetch_add(1, std::memory_order_relaxed);
        e.count.fetch_add(weight, std::memory_order_relaxed);
        e.observations.fetch_add(1, std::memory_order_relaxed);
        return;
      }
      seen = expected;  // another thread claimed the slot first
    }
    if (seen == pc) {
      e.count.fetch_add(weight, std::memory_order_relaxed);
      e.observations.fetch_add(1, std::memory_order_relaxed);  // same cache line: one more add
      return;
    }
    slot = (slot + 1) & mask_;
  }
  dropped_.fetch_add(weight, std::memory_order_relaxed);
}

void PcTable::clear() {
  // Every fork child of a profiled process clears: the pages go back
  // rather than 1 MiB of zeros written (base/mapped_table.h).
  base::clear_mapped_arrays(this, mapped_bytes_, mask_ + 1, [this](size_t i) {
    entries_[i].pc.store(0, std::memory_order_relaxed);
    entries_[i].count.store(0, std::memory_order_relaxed);
    entries_[i].observations.store(0, std::memory_order_relaxed);
  });
  used_.store(0, std::memory_order_relaxed);
  dropped_.store(0, std::memory_order_relaxed);
}

}  // namespace profiling::sampler
