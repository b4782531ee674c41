// The CPU time of ended threads beyond their samples (thread_time.h), and
// the memory of it: a thread that ended without a count (an attach's
// per-CPU events send no READ) is forgotten two settles after its EXIT,
// one whose READ came is settled once (issue 32: an hour attached to a
// server that starts and ends threads all the time kept every one).
#include "outside/thread_time.h"

#include <gtest/gtest.h>

#include <map>

namespace profiling::outside {
namespace {

constexpr uint64_t kPeriod = 2'000'000;

TEST(ThreadTimes, ThreadsEndedWithoutACountAreForgotten) {
  ThreadTimes times;
  std::map<uint32_t, uint64_t> said;
  auto settle = [&] {
    times.settle(kPeriod, [&](pid_t, uint64_t, uint32_t tid, uint64_t unsampled_ns) { said[tid] += unsampled_ns; });
  };
  // An hour's churn in small: 100 windows of 1,000 threads sampled and
  // ended, with no READ.
  for (uint32_t window = 0; window < 100; ++window) {
    for (uint32_t i = 0; i < 1000; ++i) {
      const uint32_t tid = 1000 + window * 1000 + i;
      // A round's task records come before its samples: a thread's last
      // samples after its EXIT, half of them here.
      if (i % 2) times.sampled(tid, 3);
      times.exited(tid);
      if (i % 2 == 0) times.sampled(tid, 3);
    }
    settle();
  }
  settle();
  EXPECT_LE(times.threads(), 1000u);  // the last window's, at most
  settle();
  EXPECT_EQ(times.threads(), 0u);
  EXPECT_TRUE(said.empty());  // no count: nothing said unsampled
}

TEST(ThreadTimes, AThreadsCountIsSettledOnceBeyondItsSamples) {
  ThreadTimes times;
  times.sampled(7, 10);  // 20 ms sampled
  perf::Read read;
  read.pid = 5, read.tid = 7, read.value = 25'000'000;  // 25 ms ran
  times.on_read(read);
  times.exited(7);
  times.sampled(8, 4);  // still running: kept
  uint64_t unsampled = 0;
  int calls = 0;
  for (int i = 0; i < 3; ++i)
    times.settle(kPeriod, [&](pid_t pid, uint64_t, uint32_t tid, uint64_t ns) {
      EXPECT_EQ(pid, 5);
      EXPECT_EQ(tid, 7u);
      unsampled += ns;
      ++calls;
    });
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(unsampled, 5'000'000u);
  EXPECT_EQ(times.threads(), 1u);  // thread 8's periods, until it ends
}

}  // namespace
}  // namespace profiling::outside
