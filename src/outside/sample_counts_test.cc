// The tally keeps one entry per distinct key whatever their number (the
// index grows past its first size many times here), adds to the same
// entry for the same key, tells keys apart by each field, and forgets
// everything at clear().
#include "outside/sample_counts.h"

#include <gtest/gtest.h>

#include <map>
#include <tuple>

namespace profiling::outside {
namespace {

TEST(SampleCounts, OneEntryPerKeyAcrossGrowth) {
  SampleCounts counts;
  std::map<std::tuple<uint64_t, uint32_t, pid_t, uint8_t>, uint64_t> expected;
  // Leaves a byte apart (one loop's PCs) and the same leaf under many
  // stacks, threads and GIL states: 3 passes over 20,000 keys.
  for (int pass = 0; pass < 3; ++pass)
    for (uint64_t i = 0; i < 20000; ++i) {
      const SampleKey key{0x401000 + i % 4000, static_cast<uint32_t>(i % 7), static_cast<pid_t>(100 + i / 4000),
                          static_cast<uint8_t>(i % 3 == 0)};
      SampleCounts::Tally& t = counts[key];
      t.periods += i + 1;
      ++t.observations;
      expected[{key.leaf, key.stack, key.tid, key.gil}] += i + 1;
    }
  ASSERT_EQ(counts.size(), expected.size());
  size_t seen = 0;
  for (const auto& [key, tally] : counts) {
    const auto it = expected.find({key.leaf, key.stack, key.tid, key.gil});
    ASSERT_NE(it, expected.end());
    EXPECT_EQ(tally.periods, it->second);
    EXPECT_EQ(tally.observations, 3u);
    ++seen;
  }
  EXPECT_EQ(seen, expected.size());
}

TEST(SampleCounts, EachFieldTellsKeysApart) {
  SampleCounts counts;
  const SampleKey base{0x1000, 1, 42, 0};
  counts[base].periods = 1;
  SampleKey other = base;
  other.leaf = 0x1001;
  counts[other].periods = 2;
  other = base;
  other.stack = 2;
  counts[other].periods = 3;
  other = base;
  other.tid = 43;
  counts[other].periods = 4;
  other = base;
  other.gil = 1;
  counts[other].periods = 5;
  EXPECT_EQ(counts.size(), 5u);
  EXPECT_EQ(counts[base].periods, 1u);
  EXPECT_EQ(counts.size(), 5u);
}

TEST(SampleCounts, ClearForgetsEveryKey) {
  SampleCounts counts;
  for (uint64_t i = 0; i < 5000; ++i) counts[{i * 16, 0, 1, 0}].periods = 7;
  counts.clear();
  EXPECT_EQ(counts.size(), 0u);
  EXPECT_EQ(counts.begin(), counts.end());
  EXPECT_EQ((counts[{16, 0, 1, 0}].periods), 0u);
  EXPECT_EQ(counts.size(), 1u);
}

}  // namespace
}  // namespace profiling::outside
