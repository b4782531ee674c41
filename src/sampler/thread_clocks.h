// Per-thread sampling clocks: one POSIX CPU-time timer (SIGEV_THREAD_ID) or
// one perf_event_open task-clock counter per thread, each signalling only the
// thread whose CPU time ran. A process-wide timer (ITIMER_PROF, glibc's
// choice) would interrupt whichever thread the kernel picks — idle threads in
// poll or epoll_wait among them, which return EINTR even under SA_RESTART —
// and skew shares between threads.
//
// Only the functions marked ASYNC-SIGNAL-SAFE may be called from the handler.
#ifndef PROFIL_SAMPLER_THREAD_CLOCKS_H
#define PROFIL_SAMPLER_THREAD_CLOCKS_H

#include <signal.h>
#include <sys/types.h>
#include <time.h>

#include <cstdint>
#include <string>

#include "sampler/sampler.h"

namespace profiling::sampler {

inline constexpr int kSamplingSignal = SIGPROF;

// One thread's clock. Lives in a fixed static array and is never freed, so a
// pointer carried in a timer's sigev_value is always safe to check.
struct ThreadClock {
  pid_t tid = 0;
  bool in_use = false;
  bool has_timer = false;
  timer_t timer{};
  int perf_fd = -1;
};

// ASYNC-SIGNAL-SAFE: is this the sigev_value of one of our timers?
ThreadClock* clock_from_timer_value(void* value);
// ASYNC-SIGNAL-SAFE: is fd one of our perf counters?
bool is_our_perf_fd(int fd);
// CPU-time timers are not jittered: the kernel checks them at its tick, so
// the sampling instants are the tick's whatever the period, and re-arming a
// timer from the handler to move its expiry lost up to 20 % of the samples
// under CPU contention (measured: 3 busy loops on 2 cores). The perf clock,
// whose hrtimer really fires at the period, is jittered (perf_sample_weight).
// ASYNC-SIGNAL-SAFE: the weight of a CPU-timer signal (periods of the
// thread's CPU time since its previous sample), given the signal's overrun.
uint32_t timer_sample_weight(int overrun);
// ASYNC-SIGNAL-SAFE: the weight of a perf overflow signal on fd (periods of
// task-clock since the thread's previous sample), scheduling the next one.
uint32_t perf_sample_weight(int fd);

// The rest is NOT async-signal-safe; all of it runs under the control lock.
// Starts sampling every thread of the process with the configured clock.
// Returns 0 or an errno value (EBUSY: the program handles SIGPROF itself).
int start_all_threads(const ClockSettings& settings);
void stop_all_threads();
bool sampling_running();
// Sample the calling thread too (it was created after start_all_threads).
void start_current_thread();
void stop_current_thread();
// exec: stop every clock and discard a pending signal; and the way back.
void suspend_for_exec();
void resume_after_exec();
// fork, in the child: forget the parent's clocks, sample the only thread.
void reset_in_child();

ClockKind running_clock();
unsigned running_hz();
uint64_t running_period_ns();
std::string perf_fallback_reason();

}  // namespace profiling::sampler

#endif  // PROFIL_SAMPLER_THREAD_CLOCKS_H
