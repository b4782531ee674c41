// A bounded, lock-free table of distinct call stacks and their weights.
//
// ASYNC-SIGNAL-SAFE: add() may run in the signal handler of any thread at
// once (CAS on a slot, fetch_add on a frame pool and on the weights). All
// memory is mapped once by create() and never grows: a stack that finds no
// slot or no room for its frames is counted in dropped_samples() /
// dropped_weight(), never lost silently.
//
// The dump writer reads it with for_each() (NOT async-signal-safe only in
// that it is meant for the writer; it neither allocates nor locks).
//
// A stack is identified by its frames (leaf first), its depth, its
// truncated mark and the thread it was taken in (issue 22: per-thread
// views; a thread's stacks are its own entries). Two threads inserting the same new stack at the same
// moment may each get a slot (one waits for no one): for_each() can then
// report the same stack twice, and a consumer adds up equal stacks.
#ifndef PROFIL_UNWIND_STACK_TABLE_H
#define PROFIL_UNWIND_STACK_TABLE_H

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace profiling::unwind {

class StackTable {
 public:
  // Room for `stacks` distinct stacks (rounded up to a power of two) and
  // `frames` program counters in all. nullptr when the memory cannot be
  // mapped. Not async-signal-safe.
  static StackTable* create(size_t stacks, size_t frames);
  // Only when no handler can reach the table any more.
  static void destroy(StackTable* table);

  // Adds weight to the stack pcs[0..depth) (leaf first) of thread tid (0:
  // unknown), and one observation. ASYNC-SIGNAL-SAFE, lock-free. depth 0
  // is counted as dropped.
  void add(const uint64_t* pcs, uint32_t depth, bool truncated, uint64_t weight, int32_t tid = 0);

  // Calls visit(pcs_leaf_first, depth, truncated, weight, tid) for every stored
  // stack, or visit(..., tid, observations) when visit takes them. Safe while add() runs (a stack being inserted is skipped or
  // seen whole; its weight may grow meanwhile).
  template <typename Visit>
  void for_each(Visit&& visit) const {
    // Only the slots taken, in the order they were taken: a short process
    // that stored a few stacks reads a few slots, not the whole table's
    // pages.
    uint64_t taken = slots_taken_.load(std::memory_order_acquire);
    if (taken > mask_ + 1) taken = mask_ + 1;
    for (uint64_t n = 0; n < taken; ++n) {
      const uint32_t entry = order_[n].load(std::memory_order_acquire);
      if (entry == 0) continue;  // being inserted
      const Slot& slot = slots_[entry - 1];
      const uint64_t info = slot.info.load(std::memory_order_acquire);
      if (!(info & kReady)) continue;
      const uint64_t weight = slot.weight.load(std::memory_order_relaxed);
      if (weight == 0) continue;
      const auto* pcs = static_cast<const uint64_t*>(frames_ + frames_of(info));
      const int32_t tid = slot.tid.load(std::memory_order_relaxed);
      if constexpr (std::is_invocable_v<Visit, const uint64_t*, uint32_t, bool, uint64_t, int32_t, uint32_t>)
        visit(pcs, depth_of(info), (info & kTruncated) != 0, weight, tid,
              slot.observations.load(std::memory_order_relaxed));
      else
        visit(pcs, depth_of(info), (info & kTruncated) != 0, weight, tid);
    }
  }

  // Forgets every stack (after fork), handing the pages back. Not safe
  // against concurrent add().
  void clear();

  size_t capacity() const { return mask_ + 1; }
  size_t frame_capacity() const { return frame_capacity_; }
  size_t frames_used() const;
  uint64_t dropped_samples() const { return dropped_samples_.load(std::memory_order_relaxed); }
  uint64_t dropped_weight() const { return dropped_weight_.load(std::memory_order_relaxed); }

 private:
  // info: frame offset (40 bits) << 24 | depth (16 bits) << 8 | flags.
  static constexpr uint64_t kReady = 1;
  static constexpr uint64_t kTruncated = 2;
  static uint64_t frames_of(uint64_t info) { return info >> 24; }
  static uint32_t depth_of(uint64_t info) { return static_cast<uint32_t>((info >> 8) & 0xffff); }

  struct Slot {
    std::atomic<uint64_t> hash;  // 0: empty
    std::atomic<uint64_t> info;  // kReady set once the frames are written
    std::atomic<uint64_t> weight;
    std::atomic<int32_t> tid;  // written before info's kReady
    // The add() calls behind weight (signals or ring records; issue 22).
    // 32 bits, in the slot's former padding: a slot stays 32 bytes; one
    // stack of one thread wraps after 2^32 signals (12 days of its CPU
    // time at 4 kHz).
    std::atomic<uint32_t> observations;
  };

  StackTable() = default;
  bool matches(const Slot& slot, uint64_t info, const uint64_t* pcs, uint32_t depth, bool truncated,
               int32_t tid) const;

  size_t mask_ = 0;
  size_t mapped_bytes_ = 0;
  size_t frame_capacity_ = 0;
  Slot* slots_ = nullptr;
  // 1 + the index of each slot taken, in the order taken (0: being written).
  std::atomic<uint32_t>* order_ = nullptr;
  uint64_t* frames_ = nullptr;
  std::atomic<uint64_t> slots_taken_{0};
  std::atomic<uint64_t> frames_used_{0};
  std::atomic<uint64_t> dropped_samples_{0};
  std::atomic<uint64_t> dropped_weight_{0};
};

}  // namespace profiling::unwind

#endif  // PROFIL_UNWIND_STACK_TABLE_H
