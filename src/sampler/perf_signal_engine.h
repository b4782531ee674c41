// The perf-signal clock (PROFIL_CLOCK=perf-signal; the perf clock until
// 0.2, and where the perf ring cannot map its buffers): one
// perf_event_open task-clock counter per thread (exclude_kernel, so
// perf_event_paranoid 2 allows it unprivileged), its overflow signalled to
// its own thread with F_SETOWN_EX/F_SETSIG. A thread that blocks SIGPROF
// is not sampled. The counters are descriptors of the program's: one it
// closes moves the process to the cpu clock (descriptor_in_range).
//
// The handler recognizes a sample by its descriptor (is_our_perf_fd) and
// weighs it with perf_sample_weight: no virtual call per sample.
//
// ASYNC-SIGNAL-SAFE: the inline functions here, perf_sample_weight,
// PerfSignalEngine::gap_cause and descriptor_in_range. The rest runs under
// the sampler's control lock.
#ifndef PROFIL_SAMPLER_PERF_SIGNAL_ENGINE_H
#define PROFIL_SAMPLER_PERF_SIGNAL_ENGINE_H

#include <atomic>
#include <cstdint>

#include "sampler/engine.h"
#include "sampler/thread_slots.h"

namespace profiling::sampler {

namespace internal {
inline constexpr int kMaxPerfFd = 1 << 16;
// Per descriptor: 1 + the index in g_clocks of our perf counter open on it,
// 0 when it is not ours (128 KiB of zero pages, touched only where used).
extern std::atomic<uint16_t> g_perf_fd_slot[kMaxPerfFd];
}  // namespace internal

// ASYNC-SIGNAL-SAFE: is fd one of our perf counters?
inline bool is_our_perf_fd(int fd) {
  if (static_cast<unsigned>(fd) >= static_cast<unsigned>(internal::kMaxPerfFd)) return false;
  return internal::g_perf_fd_slot[fd].load(std::memory_order_acquire) != 0;
}
// ASYNC-SIGNAL-SAFE: a sample's weight counted against the thread whose
// counter sent it (fd, already checked by is_our_perf_fd). One relaxed add.
inline void count_perf_ticks(int fd, uint32_t weight) {
  const unsigned slot = internal::g_perf_fd_slot[fd].load(std::memory_order_relaxed);
  if (slot != 0) internal::g_clock_ticks[slot - 1].fetch_add(weight, std::memory_order_relaxed);
}
// ASYNC-SIGNAL-SAFE: the weight of a perf overflow signal on fd (periods of
// task-clock since the thread's previous sample), scheduling the next one.
uint32_t perf_sample_weight(int fd);

class PerfSignalEngine final : public Engine {
 public:
  ClockKind kind() const override { return ClockKind::perf_signal; }
  const char* describe() const override {
    return "a perf signal per sample and thread (perf-signal: threads that block signals are not sampled)";
  }
  Engine* fallback() const override { return &cpu_timer_engine(); }
  // Checks that the process may open a task-clock counter on itself.
  int start(uint64_t period_ns, std::string* why) override;
  void stop() override {}
  bool thread_attached(ThreadClock& c) override;
  void arm_thread(ThreadClock& c, bool on) override;
  void thread_released(ThreadClock& c) override;
  // The child's copies of the counters still count the parent's threads:
  // closed (the parent keeps its own).
  void forget_in_child(ThreadClock& c) override;
  // The child opens its own thread's counter as it attaches, at the running
  // period: nothing to start (Engine::fork_child).
  UnsampledCause gap_cause(const ThreadClock& c, bool self) const override;
  bool descriptor_in_range(unsigned first, unsigned last, bool live) override;
};

}  // namespace profiling::sampler

#endif  // PROFIL_SAMPLER_PERF_SIGNAL_ENGINE_H
