#include "format/profile.h"

namespace profiling::format {

uint64_t Profile::total_count() const {
  uint64_t total = 0;
  for (const Sample& s : samples) total += s.count;
  return total;
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
