#include "sampler/segments.h"

#include <gtest/gtest.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

namespace profiling::sampler {
namespace {

// The quadratic algorithm resolve_segments replaced (issue 11, case 7),
// kept as the reference for its semantics: regions by decreasing offset
// (stable, so the earlier region wins a tie), each claiming what the
// segments claimed so far leave free, the list re-sorted after every region.
std::vector<Segment> reference_segments(const std::vector<Region>& regions) {
  std::vector<uint32_t> order(regions.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return regions[a].offset > regions[b].offset; });
  std::vector<Segment> claimed;
  for (uint32_t index : order) {
    const Region& r = regions[index];
    uint64_t start = r.offset;
    const uint64_t end = region_end(r);
    std::vector<Segment> pieces;
    for (const Segment& c : claimed) {
      if (start >= end) break;
      if (c.end <= start || c.start >= end) continue;
      if (c.start > start) pieces.push_back({start, c.start, index});
      start = std::max(start, c.end);
    }
    if (start < end) pieces.push_back({start, end, index});
    claimed.insert(claimed.end(), pieces.begin(), pieces.end());
    std::sort(claimed.begin(), claimed.end(), [](const Segment& a, const Segment& b) { return a.start < b.start; });
  }
  return claimed;
}

// A region of nbins 16-bit bins at scale 65536: it covers [offset, offset + 2 * nbins).
Region region(uint64_t offset, size_t nbins, uint32_t scale = 65536) {
  Region r;
  r.offset = offset;
  r.nbins = nbins;
  r.scale = scale;
  return r;
}

void expect_same(const std::vector<Segment>& got, const std::vector<Segment>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].start, want[i].start) << i;
    EXPECT_EQ(got[i].end, want[i].end) << i;
    EXPECT_EQ(got[i].region, want[i].region) << i;
  }
}

TEST(ResolveSegments, HigherOffsetWinsThenEarlierRegion) {
  // [0, 100) and [50, 150): the second (higher offset) keeps [50, 150).
  // A third region at offset 50 ties with the second and loses (later).
  std::vector<Region> regions = {region(0, 50), region(50, 50), region(50, 100), region(300, 0)};
  expect_same(resolve_segments(regions), {{0, 50, 0}, {50, 150, 1}, {150, 250, 2}});
}

TEST(ResolveSegments, MatchesTheQuadraticReferenceOnRandomRegions) {
  std::mt19937_64 random(11);
  for (int round = 0; round < 2000; ++round) {
    size_t n = std::uniform_int_distribution<size_t>(0, round < 1000 ? 8 : 200)(random);
    uint64_t space = std::uniform_int_distribution<uint64_t>(1, 4000)(random);
    std::vector<Region> regions;
    for (size_t i = 0; i < n; ++i) {
      uint64_t offset = std::uniform_int_distribution<uint64_t>(0, space)(random);
      size_t nbins = std::uniform_int_distribution<size_t>(0, 300)(random);
      // Some regions at other scales (non-integral bin sizes), some empty.
      uint32_t scale = random() % 4 == 0 ? std::uniform_int_distribution<uint32_t>(0, 65536)(random) : 65536;
      regions.push_back(region(offset, nbins, scale));
    }
    expect_same(resolve_segments(regions), reference_segments(regions));
    if (HasFailure()) {
      ADD_FAILURE() << "round " << round;
      return;
    }
  }
}

// 10^6 regions, nested and overlapping (the case that took over a minute):
// the result is checked for shape; the time is printed, not asserted
// (bench/ measures speed).
TEST(ResolveSegments, AMillionRegions) {
  constexpr size_t kRegions = 1'000'000;
  std::mt19937_64 random(7);
  std::vector<Region> regions;
  regions.reserve(kRegions);
  for (size_t i = 0; i < kRegions; ++i)
    regions.push_back(region(std::uniform_int_distribution<uint64_t>(0, uint64_t{1} << 32)(random),
                             std::uniform_int_distribution<size_t>(1, 1 << 16)(random)));
  // CPU time as well as wall time: on a busy machine the wall time says
  // more about the neighbours than about the algorithm.
  auto cpu_seconds = [] {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
  };
  auto begin = std::chrono::steady_clock::now();
  double cpu_begin = cpu_seconds();
  std::vector<Segment> segments = resolve_segments(regions);
  double cpu = cpu_seconds() - cpu_begin;
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  std::printf("resolve_segments: %zu regions -> %zu segments in %.3f s CPU (%.3f s wall)\n", kRegions,
              segments.size(), cpu, seconds);
  ASSERT_FALSE(segments.empty());
  // Sorted, disjoint, non-empty, each inside its region; and the region
  // with the highest offset keeps all of its range.
  size_t top = 0;
  for (size_t i = 0; i < kRegions; ++i)
    if (regions[i].offset > regions[top].offset) top = i;
  uint64_t top_covered = 0;
  for (size_t i = 0; i < segments.size(); ++i) {
    const Segment& s = segments[i];
    ASSERT_LT(s.start, s.end);
    if (i > 0) {
      ASSERT_LE(segments[i - 1].end, s.start);
    }
    ASSERT_GE(s.start, regions[s.region].offset);
    ASSERT_LE(s.end, region_end(regions[s.region]));
    if (s.region == top) top_covered += s.end - s.start;
  }
  EXPECT_EQ(top_covered, region_end(regions[top]) - regions[top].offset);
}

}  // namespace
}  // namespace profiling::sampler
