#include "format/profile.h"

#include <algorithm>

namespace profiling::format {

uint64_t Profile::total_count() const {
  uint64_t total = 0;
  for (const Sample& s : samples) saturating_add(total, s.count);
  return total;
}

bool coalesce_samples(std::vector<Sample>* samples) {
  auto by_address = [](const Sample& a, const Sample& b) {
    return a.address != b.address ? a.address < b.address : a.pid < b.pid;
  };
  if (!std::is_sorted(samples->begin(), samples->end(), by_address))
    std::sort(samples->begin(), samples->end(), by_address);
  bool saturated = false;
  size_t kept = 0;
  for (size_t i = 0; i < samples->size(); ++i) {
    Sample& s = (*samples)[i];
    if (kept > 0 && (*samples)[kept - 1].address == s.address && (*samples)[kept - 1].pid == s.pid)
      saturated |= saturating_add((*samples)[kept - 1].count, s.count);
    else
      (*samples)[kept++] = s;
  }
  samples->resize(kept);
  return saturated;
}

const Mapping* Profile::mapping_for(uint64_t address) const {
  for (const Mapping& m : mappings)
    if (m.contains(address)) return &m;
  return nullptr;
}

const std::vector<Frame>* Profile::frames_for(uint64_t address) const {
  auto it = frames.find(address);
  return it == frames.end() ? nullptr : &it->second;
}

}  // namespace profiling::format
