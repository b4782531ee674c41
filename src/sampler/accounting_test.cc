// The sampler's accounting of CPU time no sample caught (sampler.h): a
// thread that blocks the sampling signal is measured against its CPU
// clock and counted with its cause; a thread sampled normally is not.
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cmath>

#include <gtest/gtest.h>

#include "sampler/sampler.h"
#include "sampler/thread_slots.h"
#include "sampler/unsampled.h"

namespace profiling::sampler {
namespace {

TEST(Accounting, NoiseRule) {
  const uint64_t period = 2'000'000;
  EXPECT_FALSE(unsampled_beyond_noise(3'999'999, 1'000'000'000, period));  // under 2 periods
  EXPECT_FALSE(unsampled_beyond_noise(40'000'000, 1'000'000'000, period));  // 4 %
  EXPECT_TRUE(unsampled_beyond_noise(50'000'000, 1'000'000'000, period));   // 5 %
  EXPECT_TRUE(unsampled_beyond_noise(4'000'000, 4'000'000, period));        // a short thread, all of it
}

// Issue 32: a thread whose ring lost records and whose rest is put down to
// a full ring too is one thread of that row, with both parts.
TEST(Accounting, AThreadCountsOnceInEachRow) {
  constexpr auto ring_full = static_cast<uint32_t>(UnsampledCause::ring_full);
  constexpr auto in_kernel = static_cast<uint32_t>(UnsampledCause::in_kernel);
  ThreadGapParts both = split_thread_gap(5'000'000, ring_full, 7'000'000);
  ASSERT_EQ(both.rows, 1u);
  EXPECT_EQ(both.cause[0], ring_full);
  EXPECT_EQ(both.cpu_ns[0], 12'000'000u);
  EXPECT_EQ(both.noise_ns, 0u);
  // Two causes: a row each.
  ThreadGapParts two = split_thread_gap(5'000'000, in_kernel, 7'000'000);
  ASSERT_EQ(two.rows, 2u);
  EXPECT_EQ(two.cause[0], ring_full);
  EXPECT_EQ(two.cpu_ns[0], 5'000'000u);
  EXPECT_EQ(two.cause[1], in_kernel);
  EXPECT_EQ(two.cpu_ns[1], 7'000'000u);
  // Losses and a rest within the noise; nothing at all.
  ThreadGapParts noise = split_thread_gap(5'000'000, 0, 1'000);
  ASSERT_EQ(noise.rows, 1u);
  EXPECT_EQ(noise.cpu_ns[0], 5'000'000u);
  EXPECT_EQ(noise.noise_ns, 1'000u);
  EXPECT_EQ(split_thread_gap(0, 0, 1'000).rows, 0u);
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct Burn {
  bool block = false;
  pid_t tid = 0;
  double cpu = 0;
};

void* burn(void* opaque) {
  auto* b = static_cast<Burn*>(opaque);
  if (b->block) {
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, kSamplingSignal);
    // The raw system call: pthread_sigmask keeps the program's SIGPROF
    // apart from the kernel's mask and the thread would be sampled
    // (program_mask.h); a raw rt_sigprocmask is what still blocks it.
    syscall(SYS_rt_sigprocmask, SIG_BLOCK, &mask, nullptr, sizeof(unsigned long));
  }
  b->tid = static_cast<pid_t>(syscall(SYS_gettid));
  volatile double sink = 0;
  const double start = thread_cpu_seconds();
  while (thread_cpu_seconds() - start < 0.3)
    for (int i = 0; i < 10000; ++i) sink = sink + i * 0.5;
  b->cpu = thread_cpu_seconds();
  return nullptr;
}

class AccountingOnClock : public ::testing::TestWithParam<ClockKind> {};
// The clocks that send a signal per sample: a thread that blocks it is not
// sampled. (The perf clock's ring samples it: RingClock below.)
INSTANTIATE_TEST_SUITE_P(Clocks, AccountingOnClock, ::testing::Values(ClockKind::cpu, ClockKind::perf_signal));

// One thread blocks the signal, one does not; both end before the
// measurement, so their gaps come from the process-wide rows their
// clocks' release wrote.
TEST_P(AccountingOnClock, BlockedThreadIsCountedWithItsCause) {
  ASSERT_EQ(set_clock_settings({GetParam(), 1000}), 0);
  PcTable* table = PcTable::create(4096);
  ASSERT_NE(table, nullptr);
  set_pc_table(table);
  if (active_clock() != GetParam()) {
    set_pc_table(nullptr);
    GTEST_SKIP() << "clock not available: " << clock_fallback_reason();
  }
  // The rows are the process's since it started (a clock switch must not
  // lose them): what this test adds is the difference.
  Unsampled before;
  unsampled_time(&before);
  Burn blocked{true}, sampled{false};
  pthread_t a, b;
  ASSERT_EQ(pthread_create(&a, nullptr, burn, &blocked), 0);
  ASSERT_EQ(pthread_create(&b, nullptr, burn, &sampled), 0);
  pthread_join(a, nullptr);
  pthread_join(b, nullptr);
  Unsampled measured;
  unsampled_time(&measured);
  set_pc_table(nullptr);

  const size_t cause = static_cast<size_t>(UnsampledCause::signals_blocked) - 1;
  UnsampledRow row = measured.rows[cause];
  const UnsampledRow& earlier = before.rows[cause];
  ASSERT_EQ(row.threads, earlier.threads + 1);
  if (earlier.threads < kUnsampledTids) {
    EXPECT_EQ(row.tids[earlier.threads], blocked.tid);
  }
  row.cpu_ns -= earlier.cpu_ns;
  // All of the blocked thread's CPU time since its clock started (a few
  // microseconds after the thread did): nothing of it was sampled.
  EXPECT_LE(static_cast<double>(row.cpu_ns), blocked.cpu * 1e9 + 1e6);
  EXPECT_GE(static_cast<double>(row.cpu_ns), blocked.cpu * 1e9 - 5e6);
  // The other thread's gap is within the noise: no row names it — except,
  // on the cpu clock, time its timer had not reported when it ended (the
  // kernel checks a CPU-time timer only at a tick that finds the thread
  // running: on a busy machine a thread running in short slices can end
  // 10-20 ms past its last check), which has a row of its own; and, on
  // the perf-signal clock, time in the kernel: the event counts user mode
  // only, and the kernel drops an expiry that finds the thread in kernel
  // mode (perf_exclude_event), which on a busy machine — a switch in or
  // out at every short slice — is often enough to pass the noise (seen
  // once in a full suite beside four builds).
  const size_t between_ticks = static_cast<size_t>(UnsampledCause::between_ticks) - 1;
  const size_t in_kernel = static_cast<size_t>(UnsampledCause::in_kernel) - 1;
  for (size_t c = 0; c < kUnsampledCauses; ++c) {
    if (GetParam() == ClockKind::cpu && c == between_ticks) continue;
    if (GetParam() == ClockKind::perf_signal && c == in_kernel) continue;
    EXPECT_EQ(measured.rows[c].threads - before.rows[c].threads, c == cause ? 1u : 0u);
    for (uint32_t i = 0; i < measured.rows[c].threads && i < kUnsampledTids; ++i)
      EXPECT_NE(measured.rows[c].tids[i], sampled.tid);
  }
}

// The perf clock's ring buffer: the kernel writes the samples, no signal
// reaches the thread, so one that blocks SIGPROF is sampled like the other
// and neither has a row.
TEST(RingClock, SamplesAThreadThatBlocksTheSignal) {
  ASSERT_EQ(set_clock_settings({ClockKind::perf, 1000}), 0);
  PcTable* table = PcTable::create(4096);
  ASSERT_NE(table, nullptr);
  set_pc_table(table);
  if (active_clock() != ClockKind::perf) {
    set_pc_table(nullptr);
    GTEST_SKIP() << "ring not available: " << clock_fallback_reason();
  }
  Unsampled before;
  unsampled_time(&before);
  const uint64_t ticks_before = stats().ticks;
  Burn blocked{true}, sampled{false};
  pthread_t a, b;
  ASSERT_EQ(pthread_create(&a, nullptr, burn, &blocked), 0);
  ASSERT_EQ(pthread_create(&b, nullptr, burn, &sampled), 0);
  pthread_join(a, nullptr);
  pthread_join(b, nullptr);
  Unsampled measured;
  unsampled_time(&measured);  // reads the rings first
  const uint64_t ticks = stats().ticks - ticks_before;
  set_pc_table(nullptr);
  for (size_t c = 0; c < kUnsampledCauses; ++c) {
    EXPECT_EQ(measured.rows[c].threads, before.rows[c].threads)
        << "cause " << c + 1 << ": " << measured.rows[c].cpu_ns - before.rows[c].cpu_ns << " ns; the threads ran "
        << blocked.cpu << " s and " << sampled.cpu << " s";
    for (uint32_t i = 0; i < measured.rows[c].threads && i < kUnsampledTids; ++i) {
      EXPECT_NE(measured.rows[c].tids[i], blocked.tid);
      EXPECT_NE(measured.rows[c].tids[i], sampled.tid);
    }
  }
  // Both threads' 0.6 s at 1 kHz, the main thread's joins adding little:
  // a sample per period of task-clock, less up to a period per CPU and
  // thread (each CPU's event keeps its remainder); 4.5 sigma of Poisson
  // noise is generous for samples taken at fixed CPU-time instants.
  const double expected = (blocked.cpu + sampled.cpu) * 1000.0;
  EXPECT_NEAR(static_cast<double>(ticks), expected, 4.5 * std::sqrt(expected) + 0.02 * expected + 8);
}

}  // namespace
}  // namespace profiling::sampler
