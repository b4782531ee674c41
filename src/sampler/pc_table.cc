// ASYNC-SIGNAL-SAFE: add() and for_each() (see pc_table.h); create/destroy/
// clear are setup-time only.
#include "sampler/pc_table.h"

#include <sys/mman.h>
#include <unistd.h>

#include <new>

namespace profiling::sampler {

namespace {
size_t round_up_pow2(size_t n) {
  size_t p = 1;
  while (p < n) p <<= 1;
  return p;
}
// Fibonacci hashing: code addresses are clustered and 16-byte aligned, so the
// low bits alone would pile them into a few slots.
inline size_t slot_of(uint64_t pc, size_t mask) {
  return static_cast<size_t>((pc * 0x9E3779B97F4A7C15ull) >> 20) & mask;
}
}  // namespace

PcTable* PcTable::create(size_t capacity) {
  const size_t slots = round_up_pow2(capacity < 64 ? 64 : capacity);
  const size_t bytes = sizeof(PcTable) + 64 + slots * sizeof(Entry);
  void* memory = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) return nullptr;
  auto* table = new (memory) PcTable();
  table->mask_ = slots - 1;
  table->mapped_bytes_ = bytes;
  // Fresh anonymous pages are zero: every entry starts empty.
  table->entries_ = reinterpret_cast<Entry*>(static_cast<char*>(memory) + sizeof(PcTable) + 64 -
                                             (sizeof(PcTable) + 64) % alignof(Entry));
  return table;
}

void PcTable::destroy(PcTable* table) {
  if (table == nullptr) return;
  const size_t bytes = table->mapped_bytes_;
  table->~PcTable();
  ::munmap(table, bytes);
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
        return;
      }
      seen = expected;  // another thread claimed the slot first
    }
    if (seen == pc) {
      e.count.fetch_add(weight, std::memory_order_relaxed);
      return;
    }
    slot = (slot + 1) & mask_;
  }
  dropped_.fetch_add(weight, std::memory_order_relaxed);
}

void PcTable::clear() {
  // Every fork child of a profiled process clears: storing zeros would
  // touch the whole mapping (1 MiB, 256 page faults, per process of a
  // shell loop; issue 12). The entries' whole pages are handed back
  // instead (madvise(2): a private anonymous page reads as zeros again),
  // and only the entries sharing the table's first page are zeroed.
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin = reinterpret_cast<uintptr_t>(entries_);
  const uintptr_t end = begin + (mask_ + 1) * sizeof(Entry);
  const uintptr_t whole = (begin + page - 1) & ~(page - 1);
  size_t zeroed = mask_ + 1;
  if (whole < end && ::madvise(reinterpret_cast<void*>(whole), end - whole, MADV_DONTNEED) == 0)
    zeroed = (whole - begin) / sizeof(Entry);
  for (size_t i = 0; i < zeroed; ++i) {
    entries_[i].pc.store(0, std::memory_order_relaxed);
    entries_[i].count.store(0, std::memory_order_relaxed);
  }
  used_.store(0, std::memory_order_relaxed);
  dropped_.store(0, std::memory_order_relaxed);
}

}  // namespace profiling::sampler
