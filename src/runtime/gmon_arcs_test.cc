#include "runtime/gmon_arcs.h"

#include <gtest/gtest.h>

#include <map>
#include <thread>
#include <utility>
#include <vector>

namespace profiling::runtime {
namespace {

using ArcMap = std::map<std::pair<uint64_t, uint64_t>, uint64_t>;

ArcMap contents(const ArcTable& table) {
  ArcMap arcs;
  table.for_each([&](uint64_t from, uint64_t self, uint64_t count) {
    EXPECT_EQ(arcs.count({from, self}), 0u) << "one arc in two slots";
    arcs[{from, self}] += count;
  });
  return arcs;
}

constexpr uint64_t kLow = 0x401000, kHigh = 0x481000;

TEST(ArcTable, CountsEveryCallExactly) {
  std::vector<ArcSlot> slots(1024);
  ArcTable table;
  ASSERT_TRUE(table.attach(slots.data(), slots.size(), kLow, kHigh));
  for (int i = 0; i < 2000; ++i) EXPECT_TRUE(table.record(kLow + 0x10, kLow + 0x200));
  for (int i = 0; i < 7; ++i) EXPECT_TRUE(table.record(kLow, kLow));  // offsets 0, 0 are a real arc
  EXPECT_TRUE(table.record(kHigh - 1, kLow + 0x200));
  ArcMap want{{{kLow + 0x10, kLow + 0x200}, 2000}, {{kLow, kLow}, 7}, {{kHigh - 1, kLow + 0x200}, 1}};
  EXPECT_EQ(contents(table), want);
  EXPECT_EQ(table.dropped(), 0u);
}

TEST(ArcTable, IgnoresPcsOutsideTheText) {
  std::vector<ArcSlot> slots(64);
  ArcTable table;
  ASSERT_TRUE(table.attach(slots.data(), slots.size(), kLow, kHigh));
  EXPECT_FALSE(table.record(0x7f0000001000, kLow + 8));  // called from libc
  EXPECT_FALSE(table.record(kLow + 8, kHigh));           // callee past the text
  EXPECT_FALSE(table.record(kLow - 1, kLow + 8));
  EXPECT_TRUE(contents(table).empty());
  EXPECT_EQ(table.dropped(), 0u);  // not an overflow
}

TEST(ArcTable, UnattachedCountsNothing) {
  ArcTable table;
  EXPECT_FALSE(table.record(kLow, kLow));
  std::vector<ArcSlot> slots(6);
  EXPECT_FALSE(table.attach(slots.data(), slots.size(), kLow, kHigh));  // not a power of two
  EXPECT_FALSE(table.attach(slots.data(), 4, kHigh, kLow));
  EXPECT_FALSE(table.attach(slots.data(), 4, 0, uint64_t{1} << 33));  // text over 4 GiB
}

TEST(ArcTable, ThreadsTogetherLoseNoCall) {
  // glibc's mcount drops an arc whenever another thread is inside mcount;
  // here four threads hammering the same arcs must all be counted.
  std::vector<ArcSlot> slots(ArcTable::slots_for_text(kHigh - kLow));
  ArcTable table;
  ASSERT_TRUE(table.attach(slots.data(), slots.size(), kLow, kHigh));
  constexpr int kThreads = 4, kArcs = 50, kRounds = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&table, t] {
      for (int r = 0; r < kRounds; ++r)
        for (int a = 0; a < kArcs; ++a) table.record(kLow + 16 * a, kLow + 0x8000 + 64 * ((a + t) % kArcs));
    });
  for (auto& thread : threads) thread.join();
  ArcMap arcs = contents(table);
  uint64_t total = 0;
  for (const auto& [arc, count] : arcs) total += count;
  EXPECT_EQ(total, uint64_t{kThreads} * kArcs * kRounds);
  EXPECT_EQ(arcs.size(), size_t{kArcs} * kThreads);  // (a, a+t) differs per thread
  for (const auto& [arc, count] : arcs) EXPECT_EQ(count, uint64_t{kRounds}) << std::hex << arc.first;
  EXPECT_EQ(table.dropped(), 0u);
}

TEST(ArcTable, OverflowKeepsOnlyExactCounts) {
  // Eight slots, twenty arcs: the twelve that find no room are dropped on
  // every call, the eight kept are counted exactly.
  std::vector<ArcSlot> slots(8);
  ArcTable table;
  ASSERT_TRUE(table.attach(slots.data(), slots.size(), kLow, kHigh));
  constexpr int kArcs = 20;
  uint64_t total = 0;
  for (int round = 0; round < 100; ++round)
    for (int a = 0; a < kArcs; ++a)
      if (round < a + 50) {  // arc a is called a + 50 times
        table.record(kLow + 4 * a, kLow + 0x100 + 4 * a);
        ++total;
      }
  ArcMap arcs = contents(table);
  EXPECT_EQ(arcs.size(), 8u);
  uint64_t counted = 0;
  for (const auto& [arc, count] : arcs) {
    const uint64_t a = (arc.first - kLow) / 4;
    EXPECT_EQ(arc.second, kLow + 0x100 + 4 * a);
    EXPECT_EQ(count, a + 50) << "arc " << a;
    counted += count;
  }
  EXPECT_EQ(table.dropped(), total - counted);
}

TEST(ArcTable, ClearEmptiesTable) {
  std::vector<ArcSlot> slots(2);
  ArcTable table;
  ASSERT_TRUE(table.attach(slots.data(), slots.size(), kLow, kHigh));
  for (int a = 0; a < 3; ++a) table.record(kLow + a, kLow);
  EXPECT_EQ(table.dropped(), 1u);
  table.clear();
  EXPECT_TRUE(contents(table).empty());
  EXPECT_EQ(table.dropped(), 0u);
  table.record(kLow + 2, kLow);
  EXPECT_EQ(contents(table), (ArcMap{{{kLow + 2, kLow}, 1}}));
}

TEST(ArcTable, SizedFromTheTextLikeGlibc) {
  EXPECT_EQ(ArcTable::slots_for_text(100), 1024u);                // MINARCS, then the floor
  EXPECT_EQ(ArcTable::slots_for_text(1 << 20), 65536u);          // 31457 arcs -> 62914 -> 2^16
  EXPECT_EQ(ArcTable::slots_for_text(uint64_t{1} << 36), size_t{1} << 21);  // MAXARCS 2^20, doubled
  EXPECT_EQ(ArcTable::slots_for_text(1 << 20, 5), 8u);           // PROFIL_GMON_ARCS
}

}  // namespace
}  // namespace profiling::runtime
