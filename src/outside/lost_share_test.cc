// A ring's lost records are counted as samples of the tree at the share of
// its records that were (issue 32: every lost record — a churning server's
// FORK/EXIT/READ records, other processes' samples under per-CPU events —
// was counted a sample, 1416 s of CPU "not sampled" in a window of a
// server that used ~400 s in the hour).
#include "outside/lost_share.h"

#include <gtest/gtest.h>

namespace profiling::outside {
namespace {

perf::Lost lost_records(uint64_t n, uint32_t pid_running) {
  perf::Lost l;
  l.lost = n;
  l.who.pid = pid_running;
  l.who.tid = pid_running;
  return l;
}

TEST(LostShare, LostRecordsCountAtTheTreesShareOfTheRing) {
  LostShare share;
  // A ring's mix: 1 sample of the tree (pid 100, thread 101) in 10
  // records; the rest task records and other processes' samples.
  for (int i = 0; i < 1000; ++i) {
    if (i % 10 == 0) share.tree_sample(100, 101);
    else share.other_record();
  }
  // The LOST record was written while another process (pid 7) ran.
  const perf::Lost samples = share.samples_of(lost_records(50'000, 7));
  EXPECT_EQ(samples.lost, 5'000u);
  EXPECT_EQ(samples.who.pid, 100u);  // the tree's, not whoever ran
  EXPECT_EQ(samples.who.tid, 101u);
}

TEST(LostShare, EachLostSampleIsCountedOnceOverManyLostRecords) {
  LostShare share;
  for (int i = 0; i < 3; ++i) share.other_record();
  share.tree_sample(100, 100);  // 1 in 4
  // 1,000 LOST records of 1 each: 250 samples, the fractions carried
  // (rounding each down said 0, each up 1,000).
  uint64_t total = 0;
  for (int i = 0; i < 1000; ++i) total += share.samples_of(lost_records(1, 100)).lost;
  EXPECT_EQ(total, 250u);
}

TEST(LostShare, ARingWithoutTheTreesSamplesLosesNoneOfThem) {
  LostShare share;
  for (int i = 0; i < 100; ++i) share.other_record();
  EXPECT_EQ(share.samples_of(lost_records(1'000'000, 100)).lost, 0u);
  LostShare empty;
  EXPECT_EQ(empty.samples_of(lost_records(10, 100)).lost, 0u);
}

TEST(LostShare, TheShareIsTheRecentRecordsMix) {
  LostShare share;
  // A long start of samples only, then the ring fills with others'
  // records: the share follows the latter (halved past 65,536 records).
  for (int i = 0; i < 100'000; ++i) share.tree_sample(100, 100);
  for (int i = 0; i < 1'000'000; ++i) share.other_record();
  EXPECT_LT(share.samples_of(lost_records(1'000'000, 100)).lost, 1'000u);
  // A ring of the tree's samples alone: every lost record was one.
  LostShare all;
  for (int i = 0; i < 500; ++i) all.tree_sample(100, 100);
  EXPECT_EQ(all.samples_of(lost_records(12'345, 100)).lost, 12'345u);
}

}  // namespace
}  // namespace profiling::outside
