// The caller->callee arc table behind mcount / __fentry__ (mcount_x86_64.S).
//
// ASYNC-SIGNAL-SAFE and wait-free: record() takes no lock, allocates nothing,
// calls nothing and never waits for another thread, so it may run in every
// thread at once and inside signal handlers (a -pg signal handler that
// interrupts mcount itself records its own arc and returns).
//
// Why not glibc's table: glibc's mcount (gmon/mcount.c) guards its
// froms/tos linked lists with one process-wide "busy" state; a thread that
// finds it busy drops its arc, so a threaded program's call counts come out
// short. Here every slot is a single 64-bit key and a 64-bit count:
//   key = ((from - low) << 32 | (self - low)) + 1      (0: empty)
// A thread claims an empty slot with one compare-and-swap on the key (the
// key is the whole identity of the arc, so a claimed slot is complete the
// instant it is claimed: nobody waits for a half-written slot), then adds to
// the count with an atomic fetch_add. Lookup is open addressing with linear
// probing from a multiplicative hash, bounded by kMaxProbes.
//
// Overflow: an arc that finds neither its slot nor a free one within
// kMaxProbes is not counted (dropped() says how many calls). Slots are never
// freed while recording, so an arc once dropped is dropped for good and an
// arc once in the table is always found: every count in the table is exact,
// and the table never holds a wrong one.
//
// Both PCs must lie in [low, high) (the program text given to monstartup,
// under 4 GiB): glibc also ignores arcs from outside the text (e.g. main's
// caller in libc), and gprof could not name them anyway.
#ifndef PROFIL_RUNTIME_GMON_ARCS_H
#define PROFIL_RUNTIME_GMON_ARCS_H

#include <cstddef>
#include <cstdint>

namespace profiling::runtime {

// Accessed only with the __atomic builtins (not std::atomic, whose
// always-inline members cannot be inlined into record()'s general-registers
// target).
struct ArcSlot {
  uint64_t key;
  uint64_t count;
};

class ArcTable {
 public:
  // Probe at most this many slots: bounds the cost of a call when the table
  // is nearly full. At the sizes below (load under one half for as many arcs
  // as glibc allows), a run this long is vanishingly unlikely before the
  // table is really full.
  static constexpr size_t kMaxProbes = 64;
  static constexpr uint64_t kMaxText = (uint64_t{1} << 32) - 1;

  constexpr ArcTable() = default;
  ArcTable(const ArcTable&) = delete;
  ArcTable& operator=(const ArcTable&) = delete;

  // The number of slots for a text of text_bytes: twice glibc's arc limit
  // (textsize * ARCDENSITY 3 / 100, at least MINARCS 50, at most MAXARCS
  // 2^20; gmon/gmon.c, <sys/gmon.h>) rounded up to a power of two, at least
  // 1024. override_slots (PROFIL_GMON_ARCS), when non-zero, wins.
  static size_t slots_for_text(uint64_t text_bytes, size_t override_slots = 0);

  // Starts recording into slots[0..nslots) (zeroed; nslots a power of two)
  // for PCs in [low, high). false when the range is empty or too large.
  bool attach(ArcSlot* slots, size_t nslots, uint64_t low, uint64_t high);

  // ASYNC-SIGNAL-SAFE, wait-free. Counts one call from `from` (a return
  // address in the caller) into the function containing `self`. Compiled
  // for general registers only: mcount does not save the vector registers
  // that carry floating-point arguments.
  __attribute__((no_instrument_function, target("general-regs-only"))) bool record(uint64_t from,
                                                                                    uint64_t self) {
    const uint64_t from_offset = from - low_;  // wraps high when below low
    const uint64_t self_offset = self - low_;
    if (from_offset >= text_bytes_ || self_offset >= text_bytes_) return false;
    const uint64_t key = ((from_offset << 32) | self_offset) + 1;
    size_t index = static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> hash_shift_);
    for (size_t probe = 0; probe < max_probes_; ++probe) {
      ArcSlot& slot = slots_[index];
      uint64_t seen = __atomic_load_n(&slot.key, __ATOMIC_RELAXED);
      if (seen == 0) {
        // Claim it; whoever wins, the slot then holds a complete key.
        if (__atomic_compare_exchange_n(&slot.key, &seen, key, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
          seen = key;
      }
      if (seen == key) {
        __atomic_fetch_add(&slot.count, 1, __ATOMIC_RELAXED);
        return true;
      }
      index = (index + 1) & mask_;
    }
    __atomic_fetch_add(&dropped_, 1, __ATOMIC_RELAXED);
    return false;
  }

  // Empties the table (the child after fork). Not concurrent with record()
  // from other threads (after fork the child has one thread).
  void clear();

  // Calls that found no room.
  uint64_t dropped() const { return __atomic_load_n(&dropped_, __ATOMIC_RELAXED); }
  size_t slots() const { return mask_ + 1; }
  bool attached() const { return slots_ != nullptr; }

  // f(from_pc, self_pc, count) for every arc with a non-zero count, in slot
  // order. Reads each slot atomically; concurrent records may or may not be
  // seen.
  template <typename F>
  void for_each(F&& f) const {
    if (slots_ == nullptr) return;
    for (size_t i = 0; i <= mask_; ++i) {
      const uint64_t key = __atomic_load_n(&slots_[i].key, __ATOMIC_RELAXED);
      const uint64_t count = __atomic_load_n(&slots_[i].count, __ATOMIC_RELAXED);
      if (key == 0 || count == 0) continue;
      const uint64_t packed = key - 1;
      f(low_ + (packed >> 32), low_ + (packed & 0xffffffffu), count);
    }
  }

 private:
  ArcSlot* slots_ = nullptr;
  size_t mask_ = 0;
  size_t max_probes_ = 0;
  unsigned hash_shift_ = 63;
  uint64_t low_ = 0;
  uint64_t text_bytes_ = 0;  // 0 until attached: record() then counts nothing
  uint64_t dropped_ = 0;
};

}  // namespace profiling::runtime

#endif  // PROFIL_RUNTIME_GMON_ARCS_H
