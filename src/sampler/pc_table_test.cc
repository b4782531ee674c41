#include "sampler/pc_table.h"

#include <map>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace profiling::sampler {
namespace {

TEST(PcTable, CountsEveryAddress) {
  PcTable* table = PcTable::create(1024);
  ASSERT_NE(table, nullptr);
  std::map<uint64_t, uint64_t> want;
  for (uint64_t i = 0; i < 500; ++i) {
    uint64_t pc = 0x400000 + i * 16;
    table->add(pc, i % 3 + 1);
    want[pc] += i % 3 + 1;
  }
  std::map<uint64_t, uint64_t> got;
  table->for_each([&](uint64_t pc, uint64_t count) { got[pc] += count; });
  EXPECT_EQ(got, want);
  EXPECT_EQ(table->dropped(), 0u);
  EXPECT_EQ(table->used(), 500u);
  table->clear();
  EXPECT_EQ(table->used(), 0u);
  size_t used = 0;
  table->for_each([&](uint64_t, uint64_t) { ++used; });
  EXPECT_EQ(used, 0u);
  PcTable::destroy(table);
}

// clear() hands whole pages back (madvise) and zeroes the entries sharing
// the first page: a walk after it, which an empty table skips, must find
// nothing of before in either part.
TEST(PcTable, ClearForgetsEveryPage) {
  PcTable* table = PcTable::create(1 << 14);  // 256 KiB of entries: many pages
  ASSERT_NE(table, nullptr);
  for (uint64_t i = 0; i < 4000; ++i) table->add(0x400000 + i * 16, 1);
  table->clear();
  table->add(0x123450, 7);
  std::map<uint64_t, uint64_t> got;
  table->for_each([&](uint64_t pc, uint64_t count) { got[pc] += count; });
  EXPECT_EQ(got, (std::map<uint64_t, uint64_t>{{0x123450, 7}}));
  EXPECT_EQ(table->used(), 1u);
  PcTable::destroy(table);
}

TEST(PcTable, FullTableCountsDroppedNotWrong) {
  PcTable* table = PcTable::create(64);
  uint64_t total = 0;
  for (uint64_t i = 0; i < 1000; ++i) {
    table->add(0x1000 + i * 4, 1);
    ++total;
  }
  uint64_t stored = 0;
  table->for_each([&](uint64_t, uint64_t c) { stored += c; });
  EXPECT_EQ(stored + table->dropped(), total);
  EXPECT_LE(stored, 64u);
  PcTable::destroy(table);
}

TEST(PcTable, ConcurrentAddsLoseNothing) {
  PcTable* table = PcTable::create(4096);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([table] {
      for (int i = 0; i < 100000; ++i) table->add(0x500000 + (i % 1000) * 8, 1);
    });
  for (auto& th : threads) th.join();
  uint64_t total = 0;
  table->for_each([&](uint64_t, uint64_t c) { total += c; });
  EXPECT_EQ(total + table->dropped(), 400000u);
  EXPECT_EQ(table->dropped(), 0u);
  PcTable::destroy(table);
}

}  // namespace
}  // namespace profiling::sampler
