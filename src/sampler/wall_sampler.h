// The wall clock (PROFIL_CLOCK=wall): time spent blocked, sampled without
// interrupting anyone.
//
// Running threads are sampled by their CPU-time timers, as on the cpu clock.
// A thread that sleeps — blocked in poll, read, a futex, nanosleep, a page
// fault's I/O — is sampled by a watcher thread that wakes once a period and
// reads /proc/self/task/<tid>/syscall of every other thread: for a sleeping
// thread the kernel gives its user-space program counter (after the system
// call instruction it sleeps in) and stack pointer; for a runnable one it
// says "running", and that thread's own timer counts its CPU time. With
// stacks on, the sleeper's stack is unwound from that pc and sp (no other
// register is known: a frame whose CFA needs rbp ends the walk, marked
// truncated) and recorded as the sleeper's (its tid), read again after the
// walk: a thread that woke meanwhile keeps its pc alone (a stack of one
// frame, truncated), since its frames may have changed under the walk. The two halves add up to
// each thread's CPU time plus its sleeping time, weighted in periods. Time
// a runnable thread waits for a CPU is in neither (the kernel reports such
// a thread as running: task_current_syscall()).
//
// Why not a signal per period of wall time (ITIMER_REAL, or a
// CLOCK_MONOTONIC timer per thread): a signal ends a blocked poll, select,
// epoll_wait or nanosleep with EINTR whatever SA_RESTART says (signal(7)),
// so sleep(1) would return early; reading /proc changes nothing for the
// sleeper.
//
// WallEngine is the clock's engine (engine.h): the cpu clock's engine for
// the timers, plus the watcher.
//
// NOT async-signal-safe: all of it runs under the sampler's control lock
// except the watcher thread, which allocates and reads files freely and
// hands its samples to deliver() and the stack table (sinks.h) under the
// handlers' in-flight protocol, like a signal handler, reading the
// sleeper's stack through the fault-safe loads (SIGSEGV and SIGBUS are
// unblocked in the watcher for the walk alone: a fault with them blocked
// would kill the process, force_sig_fault()); and what CpuTimerEngine marks
// ASYNC-SIGNAL-SAFE (cpu_timer_engine.h).
#ifndef PROFIL_SAMPLER_WALL_SAMPLER_H
#define PROFIL_SAMPLER_WALL_SAMPLER_H

#include <sys/types.h>

#include <cstdint>

#include "sampler/cpu_timer_engine.h"

namespace profiling::sampler {

class WallEngine final : public CpuTimerEngine {
 public:
  ClockKind kind() const override { return ClockKind::wall; }
  const char* describe() const override { return "CPU-time timers for running threads and a watcher for blocked ones"; }
  // Starts the watcher (a wake-up per period); stops it (it exits at its
  // next wake-up: nobody waits for it, so stopping under the control lock
  // cannot deadlock with the watcher's own start-up).
  int start(uint64_t period_ns, std::string* why) override;
  void stop() override;
  // The watcher did not survive the fork: a new one.
  int fork_child(uint64_t period_ns, std::string* why) override;
  // exec: the watcher samples nothing until resumed.
  void suspend_for_exec() override;
  void resume_after_exec() override;
  // Its samples count sleep too: not compared with CPU time.
  bool accounted() const override { return false; }
};

// What the watcher did, for PROFIL_STACKS_STATS (tests and measurements):
// its wake-ups that sampled, the blocked threads it sampled, how many of
// those it walked (stacks on) and how many of the walks it threw away
// because the thread woke meanwhile, and its own CPU time (schedstat, ns).
struct WallCounts {
  uint64_t rounds = 0;
  uint64_t blocked = 0;
  uint64_t walked = 0;
  uint64_t woke_during_walk = 0;
  uint64_t watcher_cpu_ns = 0;
};
// Not async-signal-safe (reads /proc).
WallCounts wall_counts();

}  // namespace profiling::sampler

#endif  // PROFIL_SAMPLER_WALL_SAMPLER_H
