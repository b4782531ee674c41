// The cpu clock (PROFIL_CLOCK=cpu, the default): one POSIX CPU-time timer
// per thread (timer_create on the thread's CPU clock, SIGEV_THREAD_ID), so
// the signal goes to the thread whose CPU time ran — a thread blocked in
// poll is never interrupted. The wall clock's running threads use the same
// timers (wall_sampler.h).
//
// A timer's sigev_value is its thread's slot (thread_slots.h), so the
// handler recognizes a sample and counts it against its thread with the
// inline functions below: the per-sample path has no call into this
// engine.
//
// ASYNC-SIGNAL-SAFE: the inline functions here and CpuTimerEngine::gap_cause.
// The rest runs under the sampler's control lock.
#ifndef PROFIL_SAMPLER_CPU_TIMER_ENGINE_H
#define PROFIL_SAMPLER_CPU_TIMER_ENGINE_H

#include <cstdint>

#include "sampler/engine.h"
#include "sampler/thread_slots.h"

namespace profiling::sampler {

// ASYNC-SIGNAL-SAFE: is this the sigev_value of one of our timers?
inline bool is_our_timer_value(const void* value) {
  const auto address = reinterpret_cast<uintptr_t>(value);
  const auto first = reinterpret_cast<uintptr_t>(&internal::g_clocks[0]);
  return address - first < sizeof internal::g_clocks;
}
// ASYNC-SIGNAL-SAFE: a sample's weight counted against the thread whose
// timer sent it (its value, already checked by is_our_timer_value). One
// relaxed add.
// false: the clock's time was flushed already (g_clock_flushed), the
// signal is dropped. The caller is counted in g_handlers_in_flight, which
// the flush waits out after setting the flag.
inline bool count_timer_ticks(const void* value, uint32_t weight, uint64_t pc) {
  const auto index = (reinterpret_cast<uintptr_t>(value) - reinterpret_cast<uintptr_t>(&internal::g_clocks[0])) /
                     sizeof(ThreadClock);
  if (internal::g_clock_flushed[index].load(std::memory_order_seq_cst)) [[unlikely]] return false;
  internal::g_clock_ticks[index].fetch_add(weight, std::memory_order_relaxed);
  internal::g_clock_last_pc[index].store(pc, std::memory_order_relaxed);
  return true;
}
// CPU-time timers are not jittered: the kernel checks them at its tick, so
// the sampling instants are the tick's whatever the period, and re-arming a
// timer from the handler to move its expiry lost up to 20 % of the samples
// under CPU contention (measured: 3 busy loops on 2 cores). The perf clock,
// whose hrtimer really fires at the period, is jittered (perf_sample_weight).
// ASYNC-SIGNAL-SAFE: the weight of a CPU-timer signal, in periods: 1 + its
// overrun. The kernel expires a CPU-time timer at exact multiples of the
// period of the thread's CPU time and counts the expirations a tick missed
// in the overrun (kernel/time/posix-cpu-timers.c, bump_cpu_timer), so the
// weights of a thread's signals add up to its CPU time in whole periods,
// the remainder carried by the timer itself. A signal is lost only when its
// timer is re-armed while it is pending (a rate change, a suspension):
// at most one period per thread and change. (Reading the thread's CPU
// clock instead cost a system call and ~60 instructions per sample.)
inline uint32_t timer_sample_weight(int overrun) {
  constexpr int kMaxOverrun = 1'000'000;  // a thread stopped for hours is one sample, not a wrap
  return 1 + static_cast<uint32_t>(overrun <= 0 ? 0 : overrun > kMaxOverrun ? kMaxOverrun : overrun);
}

// Not final: the wall clock samples its running threads with these timers.
class CpuTimerEngine : public Engine {
 public:
  ClockKind kind() const override { return ClockKind::cpu; }
  const char* describe() const override { return "per-thread CPU-time timers"; }
  int start(uint64_t period_ns, std::string* why) override;
  void stop() override {}
  bool thread_attached(ThreadClock& c) override;
  void arm_thread(ThreadClock& c, bool on) override;
  void thread_released(ThreadClock& c) override;
  // POSIX timers are not inherited by a fork child: nothing to forget, and
  // nothing to start (Engine::fork_child).
  // The kernel reports a CPU-time timer's expirations only when it checks
  // the timer, at a tick that finds the thread running, and on a busy
  // machine that can be 100 ms late (12 signals in a CPU-second seen). What
  // each thread ran since its last reported expiry, in whole periods, is
  // delivered at the PC of its last sample — where the thread was last seen
  // — so counts keep measuring CPU time.
  void flush_unreported(pid_t only_tid) override;
  UnsampledCause gap_cause(const ThreadClock& c, bool self) const override;
};

}  // namespace profiling::sampler

#endif  // PROFIL_SAMPLER_CPU_TIMER_ENGINE_H
