// The cpu clock's engine (cpu_timer_engine.h).
//
// ASYNC-SIGNAL-SAFE: CpuTimerEngine::gap_cause and what it calls
// (sampling_signal_blocked: open, read, close, pthread_sigmask). The
// handler's per-sample part is inline in the header. Everything else runs
// under the sampler's control lock.
#include "sampler/cpu_timer_engine.h"

#include <sched.h>
#include <signal.h>
#include <time.h>

#include "sampler/running_engine.h"
#include "sampler/sinks.h"

namespace profiling::sampler {
namespace {

using internal::g_clock_ticks;
using internal::g_clocks;
using internal::kMaxThreads;

constinit CpuTimerEngine g_cpu_timer;

timespec to_timespec(uint64_t ns) {
  return timespec{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
}

}  // namespace

Engine& cpu_timer_engine() { return g_cpu_timer; }

int CpuTimerEngine::start(uint64_t, std::string*) {
  // Each thread's timer is created as it is attached, at the running period.
  return 0;
}

bool CpuTimerEngine::thread_attached(ThreadClock& c) {
  // After the program's own seccomp filter: no new timer (sampler.h).
  if (!late_system_calls_allowed()) return false;
  sigevent event{};
  event.sigev_notify = SIGEV_THREAD_ID;
  event.sigev_signo = kSamplingSignal;
  event.sigev_value.sival_ptr = &c;
  event._sigev_un._tid = c.tid;
  timer_t timer;
  if (::timer_create(thread_cpu_clock(c.tid), &event, &timer) != 0) return false;
  c.timer = timer;
  c.has_timer = true;
  return true;
}

void CpuTimerEngine::arm_thread(ThreadClock& c, bool on) {
  if (!c.has_timer) return;
  itimerspec spec{};
  if (on) spec.it_interval = spec.it_value = to_timespec(running_period_ns());
  ::timer_settime(c.timer, 0, &spec, nullptr);
}

void CpuTimerEngine::thread_released(ThreadClock& c) {
  if (c.has_timer) ::timer_delete(c.timer);
  c.has_timer = false;
}

void CpuTimerEngine::flush_unreported(pid_t only_tid) {
  const uint64_t period = running_period_ns();
  const pid_t self = current_tid();
  // First every clock flushed is marked, and the handlers that counted a
  // tick before seeing the mark are waited out: after that, no signal of
  // these timers adds to what is read below (count_timer_ticks).
  bool marked = false;
  for (size_t index = 0; index < kMaxThreads; ++index) {
    const ThreadClock& c = g_clocks[index];
    if (!c.in_use || c.ignored || !c.has_timer || (only_tid != 0 && c.tid != only_tid)) continue;
    internal::g_clock_flushed[index].store(true, std::memory_order_seq_cst);
    marked = true;
  }
  if (!marked) return;
  while (g_handlers_in_flight.load(std::memory_order_seq_cst) != 0) sched_yield();
  for (size_t index = 0; index < kMaxThreads; ++index) {
    ThreadClock& c = g_clocks[index];
    if (!c.in_use || c.ignored || !c.has_timer || (only_tid != 0 && c.tid != only_tid)) continue;
    const uint64_t pc = internal::g_clock_last_pc[index].load(std::memory_order_relaxed);
    if (pc == 0 || sampling_signal_blocked(c.tid, c.tid == self)) continue;
    const int64_t now = read_clock_ns(c.tid == self ? CLOCK_THREAD_CPUTIME_ID : thread_cpu_clock(c.tid));
    if (now < 0 || static_cast<uint64_t>(now) <= c.cpu_at_attach_ns) continue;
    const uint64_t cpu = static_cast<uint64_t>(now) - c.cpu_at_attach_ns;
    const uint64_t sampled = g_clock_ticks[index].load(std::memory_order_relaxed) * period;
    if (cpu <= sampled) continue;
    // Whole periods only, as the timer itself would have counted them.
    const uint64_t whole = (cpu - sampled) / period;
    if (whole == 0) continue;
    const uint32_t weight = static_cast<uint32_t>(whole > 1'000'000 ? 1'000'000 : whole);
    g_clock_ticks[index].fetch_add(weight, std::memory_order_relaxed);
    g_handlers_in_flight.fetch_add(1, std::memory_order_seq_cst);
    deliver(pc, weight);
    g_handlers_in_flight.fetch_sub(1, std::memory_order_release);
  }
}

UnsampledCause CpuTimerEngine::gap_cause(const ThreadClock& c, bool self) const {
  if (sampling_signal_blocked(c.tid, self)) return UnsampledCause::signals_blocked;
  // The kernel had not checked the timer since the thread's last slices.
  if (c.has_timer) return UnsampledCause::between_ticks;
  return UnsampledCause::unknown;
}

}  // namespace profiling::sampler
