#include "report/gil_shares.h"

#include <algorithm>
#include <cmath>

namespace profiling::report {

GilShares::GilShares(const format::Profile& profile) : pid_(profile.pid) {
  for (const format::Sample& s : profile.samples) {
    if (s.gil == format::kGilUnknown || s.tid == 0) continue;
    Counts& c = threads_[{s.pid != 0 ? s.pid : pid_, s.tid}];
    format::saturating_add(s.gil == format::kGilHeld ? c.held : c.released, s.count);
  }
}

std::string GilShares::label(int64_t pid, int32_t tid) const {
  const auto it = threads_.find({pid != 0 ? pid : pid_, tid});
  if (it == threads_.end()) return "";
  const Counts& c = it->second;
  const double all = static_cast<double>(c.held) + static_cast<double>(c.released);
  if (all == 0) return "";
  long percent = std::lround(100.0 * static_cast<double>(c.held) / all);
  if (c.released != 0) percent = std::min(percent, 99L);
  if (c.held != 0) percent = std::max(percent, 1L);
  return " [GIL " + std::to_string(percent) + " %]";
}

}  // namespace profiling::report
