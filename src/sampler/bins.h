// The arithmetic that maps a program counter to a histogram bin, for every
// personality, and the region a signal handler counts into.
//
// ASYNC-SIGNAL-SAFE: everything here is pure arithmetic on its arguments.
//
// profil(2) (NetBSD, OpenBSD): bin = [(pc - offset) / 2] * scale / 65536.
// glibc's sprofil() with PROF_UINT divides by 4 (the bin size) instead of 2.
// illumos computes (pc - offset) * scale / 131072 (profil_tick in
// uts/common/os/clock.c: the byte offset ((pc - off) * scale) >> 16, halved to
// a bin), which differs from the printed formula for odd offsets at scales
// that are not powers of two. A PC below offset is never counted (no
// wrap-around into a bin), and neither is one past the buffer.
#ifndef PROFIL_SAMPLER_BINS_H
#define PROFIL_SAMPLER_BINS_H

#include <cstddef>
#include <cstdint>

namespace profiling::sampler {

enum class BinWidth : uint8_t { u16 = 2, u32 = 4 };
enum class BinArithmetic : uint8_t { printed = 0, illumos = 1 };
enum class BinLimit : uint8_t {
  saturate = 0,       // a full bin stays at its maximum (65535 / 2^32-1)
  stop_at_32767 = 1,  // Solaris: a count reaching 32767 stops profiling
};

inline constexpr uint64_t kNoBin = ~uint64_t{0};
inline constexpr uint32_t kMaxScale = 65536;

// One histogram region as the handler reads it. Plain data, no ownership.
struct Region {
  void* bins = nullptr;
  size_t nbins = 0;
  uint64_t offset = 0;
  uint32_t scale = 0;
  BinWidth width = BinWidth::u16;
  BinArithmetic arithmetic = BinArithmetic::printed;
};

// floor(value * scale / divisor) without 64-bit overflow, for divisor a power
// of two up to 2^17 and scale <= 2^16: split value = q * divisor + r.
constexpr uint64_t scaled(uint64_t value, uint32_t scale, uint64_t divisor) {
  return (value / divisor) * scale + (value % divisor) * scale / divisor;
}

// The bin pc falls in, or kNoBin when pc is below offset. The caller checks
// the result against the number of bins.
constexpr uint64_t bin_index(uint64_t pc, uint64_t offset, uint32_t scale, BinWidth width,
                             BinArithmetic arithmetic) {
  if (pc < offset) return kNoBin;
  const uint64_t distance = pc - offset;
  if (arithmetic == BinArithmetic::illumos) return scaled(distance, scale, 131072);
  return scaled(distance >> (width == BinWidth::u32 ? 2 : 1), scale, 65536);
}

constexpr uint64_t bin_index(uint64_t pc, const Region& r) {
  return bin_index(pc, r.offset, r.scale, r.width, r.arithmetic);
}

// The first address past the region: the smallest pc whose bin is >= nbins
// (UINT64_MAX when the region reaches the top of the address space).
// Not used by the handler; regions are resolved to address ranges up front.
uint64_t region_end(const Region& r);

}  // namespace profiling::sampler

#endif  // PROFIL_SAMPLER_BINS_H
