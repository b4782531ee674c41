// For the BPF program's tests (python_bpf_test.cc, ruby_bpf_test.cc): the
// program loaded and attached to a task-clock event on the test's own
// thread, and that thread run until the program wrote records. Skipped,
// saying why, where the kernel refuses the program (it needs root, or
// CAP_BPF and CAP_PERFMON).
//
// NOT async-signal-safe: test code.
#ifndef PROFIL_OUTSIDE_BPF_TEST_EVENT_H
#define PROFIL_OUTSIDE_BPF_TEST_EVENT_H

#include <gtest/gtest.h>
#include <linux/perf_event.h>
#include <time.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>

#include "outside/python_bpf.h"
#include "perf/event.h"

namespace profiling::outside {

class BpfOnThisThread : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    reads_ = PythonStackReads::open(100'000, &why);
    if (reads_ == nullptr) GTEST_SKIP() << "the kernel refuses the BPF program here: " << why;
    perf::EventSpec spec;
    spec.period_ns = 100'000;
    perf_event_attr attr = spec.attr();
    event_ = static_cast<int>(perf::open_event(attr, 0, -1));
    ASSERT_GE(event_, 0) << std::strerror(static_cast<int>(-event_));
    ASSERT_TRUE(reads_->attach(event_, &why)) << why;
  }
  void TearDown() override {
    if (event_ >= 0) ::close(event_);
  }

  // Runs on this thread's CPU time until the program wrote `wanted`
  // records in all (at most 5 s of this thread's CPU: a machine however
  // busy gives that).
  void burn_until_records(uint64_t wanted) {
    const double until = thread_cpu_seconds() + 5;
    volatile uint64_t sink = 0;
    while (reads_->counters().records < wanted && thread_cpu_seconds() < until)
      for (int i = 0; i < 100000; ++i) sink = sink + static_cast<uint64_t>(i);
  }

  std::unique_ptr<PythonStackReads> reads_;
  int event_ = -1;

 private:
  static double thread_cpu_seconds() {
    timespec t{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
  }
};

}  // namespace profiling::outside

#endif  // PROFIL_OUTSIDE_BPF_TEST_EVENT_H
