// profil — C++ interface: a scoped profile of a code range with its own
// buffer. Thin RAII over the C API in profil.h.
#ifndef PROFIL_PROFIL_HPP
#define PROFIL_PROFIL_HPP

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "profil/profil.h"

namespace profiling {

// Samples [low, high) into 16-bit bins while alive; one bin per
// `bytes_per_bin` bytes of code (a power of two from 2 to 65536... any value
// >= 2 works, the scale is rounded down). Only one ScopedProfile (or other
// profil() user) may be active at a time, as with profil(2) itself.
class ScopedProfile {
 public:
  ScopedProfile(uintptr_t low, uintptr_t high, unsigned bytes_per_bin = 4)
      : low_(low), bytes_per_bin_(bytes_per_bin < 2 ? 2 : bytes_per_bin) {
    if (high <= low) throw std::invalid_argument("ScopedProfile: empty address range");
    // profil(2): a scale of 65536 is 2 bytes per bin, 32768 is 4 bytes...
    scale_ = static_cast<unsigned>(131072ull / bytes_per_bin_);
    if (scale_ == 0) scale_ = 1;
    bins_.assign((high - low) / bytes_per_bin_ + 1, 0);
    if (::profil(bins_.data(), bins_.size() * sizeof(unsigned short), low_, scale_) != 0)
      throw std::system_error(errno, std::generic_category(), "profil");
  }
  ~ScopedProfile() { stop(); }
  ScopedProfile(const ScopedProfile&) = delete;
  ScopedProfile& operator=(const ScopedProfile&) = delete;

  // Stops sampling; the counts stay readable.
  void stop() {
    unsigned short* volatile off = nullptr;  // <unistd.h> says nonnull; NULL is "off"
    if (active_) ::profil(off, 0, 0, 0);
    active_ = false;
  }

  const std::vector<unsigned short>& bins() const { return bins_; }
  // The first address bin i counts.
  uintptr_t bin_address(size_t i) const { return low_ + i * bytes_per_bin_; }
  uint64_t total() const {
    uint64_t sum = 0;
    for (unsigned short b : bins_) sum += b;
    return sum;
  }
  // Sum of the bins covering [low, high).
  uint64_t count_in(uintptr_t low, uintptr_t high) const {
    uint64_t sum = 0;
    for (size_t i = 0; i < bins_.size(); ++i) {
      uintptr_t a = bin_address(i);
      if (a + bytes_per_bin_ > low && a < high) sum += bins_[i];
    }
    return sum;
  }

 private:
  uintptr_t low_;
  unsigned bytes_per_bin_;
  unsigned scale_ = 0;
  bool active_ = true;
  std::vector<unsigned short> bins_;
};

}  // namespace profiling

#endif  // PROFIL_PROFIL_HPP
