// NOT async-signal-safe: setup code (see segments.h).
#include "sampler/segments.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>

namespace profiling::sampler {

std::vector<Segment> resolve_segments(const std::vector<Region>& regions) {
  // Regions are taken from the strongest claim to the weakest; each one gets
  // the parts of its range no stronger region took. What is taken so far is
  // kept as a union of maximal intervals (start -> end): a new region only
  // walks the intervals it overlaps and merges them into one, so every
  // interval is walked once before it disappears and the whole costs
  // O(n log n) (the per-region re-sort it replaces was O(n^2 log n)).
  std::vector<uint32_t> order(regions.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return regions[a].offset > regions[b].offset; });
  std::map<uint64_t, uint64_t> taken;
  std::vector<Segment> segments;
  for (uint32_t index : order) {
    const Region& r = regions[index];
    const uint64_t start = r.offset;
    const uint64_t end = region_end(r);
    if (start >= end) continue;
    // The first interval that ends after start: the one before the first
    // interval starting after start, if it reaches past start.
    auto it = taken.upper_bound(start);
    if (it != taken.begin() && std::prev(it)->second >= start) --it;
    uint64_t merged_start = start, merged_end = end;
    uint64_t cursor = start;
    auto first = it;
    while (it != taken.end() && it->first <= end) {
      if (it->first > cursor) segments.push_back({cursor, it->first, index});
      cursor = std::max(cursor, it->second);
      merged_start = std::min(merged_start, it->first);
      merged_end = std::max(merged_end, it->second);
      ++it;
    }
    if (cursor < end) segments.push_back({cursor, end, index});
    taken.erase(first, it);
    taken.emplace(merged_start, merged_end);
  }
  std::sort(segments.begin(), segments.end(), [](const Segment& a, const Segment& b) { return a.start < b.start; });
  return segments;
}

}  // namespace profiling::sampler
