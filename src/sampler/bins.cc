// ASYNC-SIGNAL-SAFE: pure arithmetic (region_end is only called at setup).
#include "sampler/bins.h"

namespace profiling::sampler {

uint64_t region_end(const Region& r) {
  if (r.nbins == 0 || r.scale == 0) return r.offset;
  const uint64_t unit = r.arithmetic == BinArithmetic::illumos ? 1 : static_cast<uint64_t>(r.width);
  const unsigned __int128 per_bin_divisor = r.arithmetic == BinArithmetic::illumos ? 131072 : 65536;
  // Estimate: nbins bins of (divisor / scale) units each, then settle on the
  // exact boundary; bin_index is monotone in pc so a short walk suffices.
  unsigned __int128 estimate =
      r.offset + static_cast<unsigned __int128>(r.nbins) * per_bin_divisor * unit / r.scale;
  constexpr uint64_t kTop = ~uint64_t{0};
  if (estimate >= kTop) {
    if (bin_index(kTop, r) < r.nbins) return kTop;
    estimate = kTop;
  }
  uint64_t end = static_cast<uint64_t>(estimate);
  while (end > r.offset && bin_index(end - 1, r) >= r.nbins) --end;
  while (end < kTop && bin_index(end, r) < r.nbins) ++end;
  return end;
}

}  // namespace profiling::sampler
