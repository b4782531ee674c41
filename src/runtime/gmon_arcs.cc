#include "runtime/gmon_arcs.h"

#include <cstring>

namespace profiling::runtime {

size_t ArcTable::slots_for_text(uint64_t text_bytes, size_t override_slots) {
  size_t wanted = override_slots;
  if (wanted == 0) {
    // glibc gmon/gmon.c: tolimit = textsize * ARCDENSITY / 100, clamped to
    // [MINARCS, MAXARCS]; twice that keeps the load under one half.
    uint64_t limit = text_bytes * 3 / 100;
    if (limit < 50) limit = 50;
    if (limit > (uint64_t{1} << 20)) limit = uint64_t{1} << 20;
    wanted = static_cast<size_t>(2 * limit);
    if (wanted < 1024) wanted = 1024;
  }
  size_t slots = 2;
  while (slots < wanted && slots < (size_t{1} << 24)) slots <<= 1;
  return slots;
}

bool ArcTable::attach(ArcSlot* slots, size_t nslots, uint64_t low, uint64_t high) {
  if (slots == nullptr || nslots < 2 || (nslots & (nslots - 1)) != 0) return false;
  if (high <= low || high - low > kMaxText) return false;
  unsigned bits = 0;
  while ((size_t{1} << bits) < nslots) ++bits;
  slots_ = slots;
  mask_ = nslots - 1;
  max_probes_ = nslots < kMaxProbes ? nslots : kMaxProbes;
  hash_shift_ = 64 - bits;
  low_ = low;
  __atomic_store_n(&text_bytes_, high - low, __ATOMIC_RELEASE);
  return true;
}

void ArcTable::clear() {
  if (slots_ == nullptr) return;
  std::memset(static_cast<void*>(slots_), 0, (mask_ + 1) * sizeof(ArcSlot));
  __atomic_store_n(&dropped_, 0, __ATOMIC_RELAXED);
}

}  // namespace profiling::runtime
