// The stack table: one slot per distinct stack, weights added, drops
// counted when slots or frames run out, nothing lost under concurrent adds.
#include "unwind/stack_table.h"

#include <gtest/gtest.h>

#include <map>
#include <thread>
#include <vector>

namespace profiling::unwind {
namespace {

using Key = std::pair<std::vector<uint64_t>, bool>;

std::map<Key, uint64_t> contents(const StackTable& table) {
  std::map<Key, uint64_t> out;
  table.for_each([&](const uint64_t* pcs, uint32_t depth, bool truncated, uint64_t weight, int32_t) {
    out[{std::vector<uint64_t>(pcs, pcs + depth), truncated}] += weight;
  });
  return out;
}

TEST(StackTable, EqualStacksShareASlotAndTruncationSetsThemApart) {
  StackTable* table = StackTable::create(64, 1024);
  ASSERT_NE(table, nullptr);
  const uint64_t a[] = {0x401000, 0x402000, 0x403000};
  const uint64_t b[] = {0x401000, 0x402000};
  table->add(a, 3, false, 1);
  table->add(a, 3, false, 4);
  table->add(b, 2, false, 2);  // a prefix is another stack
  table->add(a, 3, true, 7);   // so is the same frames, truncated
  const auto got = contents(*table);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got.at({{0x401000, 0x402000, 0x403000}, false}), 5u);
  EXPECT_EQ(got.at({{0x401000, 0x402000}, false}), 2u);
  EXPECT_EQ(got.at({{0x401000, 0x402000, 0x403000}, true}), 7u);
  EXPECT_EQ(table->frames_used(), 3u + 2u + 3u);
  EXPECT_EQ(table->dropped_samples(), 0u);
  table->clear();
  EXPECT_TRUE(contents(*table).empty());
  EXPECT_EQ(table->frames_used(), 0u);
  // The pages handed back come back zero: the table works as new.
  table->add(b, 2, false, 9);
  const auto again = contents(*table);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again.at({{0x401000, 0x402000}, false}), 9u);
  StackTable::destroy(table);
}

TEST(StackTable, FullTablesCountWhatTheyDrop) {
  StackTable* table = StackTable::create(64, 100);
  ASSERT_NE(table, nullptr);
  // 10-frame stacks: the 100-frame pool holds 10 of them.
  uint64_t pcs[10];
  for (uint64_t s = 0; s < 30; ++s) {
    for (int i = 0; i < 10; ++i) pcs[i] = 0x400000 + s * 0x100 + i;
    table->add(pcs, 10, false, 2);
  }
  EXPECT_EQ(contents(*table).size(), 10u);
  EXPECT_EQ(table->dropped_samples(), 20u);
  EXPECT_EQ(table->dropped_weight(), 40u);
  // A stack already stored still counts.
  for (int i = 0; i < 10; ++i) pcs[i] = 0x400000 + i;
  table->add(pcs, 10, false, 5);
  EXPECT_EQ(contents(*table).at({std::vector<uint64_t>(pcs, pcs + 10), false}), 7u);
  table->add(pcs, 0, false, 1);  // an empty walk is a drop too
  EXPECT_EQ(table->dropped_samples(), 21u);
  StackTable::destroy(table);

  // Out of slots: 64 slots, 200 distinct one-frame stacks.
  table = StackTable::create(64, 1 << 12);
  ASSERT_NE(table, nullptr);
  for (uint64_t s = 0; s < 200; ++s) table->add(&s, 1, false, 1);
  const size_t kept = contents(*table).size();
  EXPECT_LE(kept, 64u);
  EXPECT_EQ(kept + table->dropped_samples(), 200u);
  StackTable::destroy(table);
}

TEST(StackTable, ConcurrentAddsLoseNoWeight) {
  StackTable* table = StackTable::create(1 << 12, 1 << 16);
  ASSERT_NE(table, nullptr);
  constexpr int kThreads = 4, kAdds = 20000, kStacks = 50;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([table] {
      uint64_t pcs[6];
      for (int i = 0; i < kAdds; ++i) {
        const uint64_t s = static_cast<uint64_t>(i % kStacks);
        for (uint64_t k = 0; k < 6; ++k) pcs[k] = 0x500000 + s * 64 + k;
        table->add(pcs, 1 + s % 6, false, 1);
      }
    });
  for (auto& thread : threads) thread.join();
  const auto got = contents(*table);  // equal stacks that raced into two slots are added up here
  EXPECT_EQ(got.size(), static_cast<size_t>(kStacks));
  uint64_t total = 0;
  for (const auto& [key, weight] : got) {
    total += weight;
    EXPECT_EQ(weight, static_cast<uint64_t>(kThreads * kAdds / kStacks));
  }
  EXPECT_EQ(total, static_cast<uint64_t>(kThreads * kAdds));
  EXPECT_EQ(table->dropped_samples(), 0u);
  StackTable::destroy(table);
}

}  // namespace
}  // namespace profiling::unwind
