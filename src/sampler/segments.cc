// NOT async-signal-safe: setup code (see segments.h).
#include "sampler/segments.h"

#include <algorithm>
#include <cstdint>

namespace profiling::sampler {

std::vector<Segment> resolve_segments(const std::vector<Region>& regions) {
  // Regions are taken from the strongest claim to the weakest, i.e. by
  // decreasing offset; each one gets the parts of its range no stronger
  // region took. What is taken so far is a union of intervals that all
  // start at or above the current offset (every earlier region's offset is
  // at least as high), so it is a stack with the lowest interval on top: a
  // region pops the intervals that start inside it (emitting the gaps
  // between them) and pushes one merged interval. Every interval is pushed
  // and popped once: O(n) after the sort, O(n log n) in all (the per-region
  // re-sort it replaces was O(n^2 log n)).
  // (offset, index) pairs sort without chasing into the regions; the index
  // breaks ties, as the earlier region wins.
  struct Claim {
    uint64_t offset;
    uint32_t index;
  };
  std::vector<Claim> order(regions.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = {regions[i].offset, i};
  std::sort(order.begin(), order.end(), [](const Claim& a, const Claim& b) {
    return a.offset != b.offset ? a.offset > b.offset : a.index < b.index;
  });
  struct Interval {
    uint64_t start, end;
  };
  std::vector<Interval> taken;  // by decreasing start: the lowest is at the back
  std::vector<Segment> segments;
  for (const Claim& claim : order) {
    const uint32_t index = claim.index;
    const Region& r = regions[index];
    const uint64_t start = r.offset;
    const uint64_t end = region_end(r);
    if (start >= end) continue;
    uint64_t cursor = start, merged_end = end;
    while (!taken.empty() && taken.back().start <= end) {
      const Interval above = taken.back();
      taken.pop_back();
      if (above.start > cursor) segments.push_back({cursor, above.start, index});
      cursor = std::max(cursor, above.end);
      merged_end = std::max(merged_end, above.end);
    }
    if (cursor < end) segments.push_back({cursor, end, index});
    taken.push_back({start, merged_end});
  }
  std::sort(segments.begin(), segments.end(), [](const Segment& a, const Segment& b) { return a.start < b.start; });
  return segments;
}

}  // namespace profiling::sampler
