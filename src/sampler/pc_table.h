// A fixed-size, lock-free table of sampled program counters and their counts,
// for whole-process profiling (profil run): the handler stores raw addresses,
// all symbolizing happens offline in the tool.
//
// ASYNC-SIGNAL-SAFE: add() may be called from the signal handler of any
// thread at once. It never allocates, locks or blocks; the storage is mapped
// once by create() (not async-signal-safe) and never moves.
#ifndef PROFIL_SAMPLER_PC_TABLE_H
#define PROFIL_SAMPLER_PC_TABLE_H

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace profiling::sampler {

class PcTable {
 public:
  struct Entry {
    std::atomic<uint64_t> pc;     // 0 = empty slot
    std::atomic<uint64_t> count;
    // The add() calls behind count: signals or ring records, each weighted
    // (a CPU-time timer's overrun); the draws a report's interval counts
    // (issue 22). 24 bytes an entry, 16 before.
    std::atomic<uint64_t> observations;
  };

  // Maps room for `capacity` distinct PCs (rounded up to a power of two).
  // Returns nullptr when the memory cannot be had. Not async-signal-safe.
  static PcTable* create(size_t capacity);
  // Unmaps the table. Only when no handler can reach it any more.
  static void destroy(PcTable* table);

  // Adds weight to pc's count, and one observation. Async-signal-safe,
  // lock-free. When the table is full, the weight is counted in dropped()
  // instead.
  void add(uint64_t pc, uint64_t weight);

  // Forgets every sample (after fork: the child keeps only its own).
  // Not safe against concurrent add(); call with sampling stopped.
  void clear();

  size_t capacity() const { return mask_ + 1; }
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  const Entry* entries() const { return entries_; }

  // Distinct PCs stored so far.
  size_t used() const { return used_.load(std::memory_order_relaxed); }

  // Calls visit(pc, count) or visit(pc, count, observations) for each used
  // slot. Async-signal-safe when visit is.
  // An empty table is not walked: most processes of a shell loop end with
  // no sample, and reading 1 MiB of untouched pages cost each of them ~0.2 ms.
  template <typename Visit>
  void for_each(Visit&& visit) const {
    if (used() == 0) return;
    for (size_t i = 0; i <= mask_; ++i) {
      uint64_t pc = entries_[i].pc.load(std::memory_order_acquire);
      uint64_t count = entries_[i].count.load(std::memory_order_relaxed);
      if (pc == 0 || count == 0) continue;
      if constexpr (std::is_invocable_v<Visit, uint64_t, uint64_t, uint64_t>)
        visit(pc, count, entries_[i].observations.load(std::memory_order_relaxed));
      else
        visit(pc, count);
    }
  }

 private:
  PcTable() = default;
  size_t mask_ = 0;
  size_t mapped_bytes_ = 0;
  std::atomic<uint64_t> dropped_{0};
  std::atomic<size_t> used_{0};
  Entry* entries_ = nullptr;
};

}  // namespace profiling::sampler

#endif  // PROFIL_SAMPLER_PC_TABLE_H
