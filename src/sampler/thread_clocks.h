// Per-thread sampling clocks: one POSIX CPU-time timer (SIGEV_THREAD_ID) or
// one perf_event_open task-clock counter per thread (perf-signal), each
// signalling only the thread whose CPU time ran; or the perf ring engine
// (perf_ring.h), which samples every thread without signals and needs only
// each thread's accounting slot here. A process-wide timer (ITIMER_PROF, glibc's
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

#include <atomic>
#include <cstddef>
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
  uint64_t cpu_at_attach_ns = 0;  // the thread's CPU clock when this clock started
  bool ignored = false;  // a watcher thread of ours: no clock, never attached
};

namespace internal {
// Every thread's clock, and which descriptors are our perf counters: the
// handler checks a signal against them (inline: it runs at every sample).
inline constexpr size_t kMaxThreads = 4096;
extern ThreadClock g_clocks[kMaxThreads];
inline constexpr int kMaxPerfFd = 1 << 16;
// Per descriptor: 1 + the index in g_clocks of our perf counter open on it,
// 0 when it is not ours (128 KiB of zero pages, touched only where used).
extern std::atomic<uint16_t> g_perf_fd_slot[kMaxPerfFd];
static_assert(kMaxThreads < 65535);
// Weighted ticks delivered per clock, since it was attached: what the
// accounting (unsampled_time) compares with the thread's CPU clock.
extern std::atomic<uint64_t> g_clock_ticks[kMaxThreads];
// The PC of each clock's latest sample (0 before the first): where the
// CPU time the kernel had not reported when a CPU-time clock stops is put.
extern std::atomic<uint64_t> g_clock_last_pc[kMaxThreads];
// Periods the perf ring lost per clock (PERF_RECORD_LOST), and those of
// threads that had no clock.
extern std::atomic<uint64_t> g_clock_lost[kMaxThreads];
extern std::atomic<uint64_t> g_unattributed_lost;
// 1 + the slot of a thread id, indexed by its low 16 bits: where the ring's
// drain finds a sample's thread (checked against the slot's tid).
inline constexpr size_t kTidHints = 1 << 16;
extern std::atomic<uint16_t> g_tid_hint[kTidHints];
}  // namespace internal

// ASYNC-SIGNAL-SAFE: the slot of thread tid, or -1.
int slot_of_tid(pid_t tid);
// ASYNC-SIGNAL-SAFE: a sample of the perf ring counted against its thread;
// lost samples too (perf_ring.h).
inline void count_ring_sample(int slot, uint64_t pc, uint32_t weight) {
  internal::g_clock_ticks[slot].fetch_add(weight, std::memory_order_relaxed);
  internal::g_clock_last_pc[slot].store(pc, std::memory_order_relaxed);
}
// ASYNC-SIGNAL-SAFE: is the thread in slot one of ours, never sampled?
inline bool slot_is_ignored(int slot) { return internal::g_clocks[slot].ignored; }
inline void count_ring_lost_slot(int slot, uint64_t periods) {
  internal::g_clock_lost[slot].fetch_add(periods, std::memory_order_relaxed);
}
inline void count_ring_lost(pid_t tid, uint64_t periods) {
  const int slot = slot_of_tid(tid);
  (slot < 0 ? internal::g_unattributed_lost : internal::g_clock_lost[slot]).fetch_add(periods,
                                                                                     std::memory_order_relaxed);
}
// ASYNC-SIGNAL-SAFE: the running engine's samples not delivered yet, now
// (the ring's). wait: not called from a signal handler.
uint32_t drain_engine(bool wait);

// ASYNC-SIGNAL-SAFE: is this the sigev_value of one of our timers?
inline bool is_our_timer_value(const void* value) {
  const auto address = reinterpret_cast<uintptr_t>(value);
  const auto first = reinterpret_cast<uintptr_t>(&internal::g_clocks[0]);
  return address - first < sizeof internal::g_clocks;
}
// ASYNC-SIGNAL-SAFE: is fd one of our perf counters?
inline bool is_our_perf_fd(int fd) {
  if (static_cast<unsigned>(fd) >= static_cast<unsigned>(internal::kMaxPerfFd)) return false;
  return internal::g_perf_fd_slot[fd].load(std::memory_order_acquire) != 0;
}
// ASYNC-SIGNAL-SAFE: is one of our perf counters open on a descriptor in
// [first, last]? (The program is about to close that range.)
bool perf_fd_in_range(unsigned first, unsigned last);
// ASYNC-SIGNAL-SAFE: the same, counting only descriptors still open on a
// perf counter; forgets the ones the program closed with a raw system call.
bool live_perf_fd_in_range(unsigned first, unsigned last);
// ASYNC-SIGNAL-SAFE: a sample's weight counted against the thread whose
// clock sent it (a timer's value, already checked by is_our_timer_value;
// a perf descriptor, already checked by is_our_perf_fd). One relaxed add.
inline void count_timer_ticks(const void* value, uint32_t weight, uint64_t pc) {
  const auto index = (reinterpret_cast<uintptr_t>(value) - reinterpret_cast<uintptr_t>(&internal::g_clocks[0])) /
                     sizeof(ThreadClock);
  internal::g_clock_ticks[index].fetch_add(weight, std::memory_order_relaxed);
  internal::g_clock_last_pc[index].store(pc, std::memory_order_relaxed);
}
inline void count_perf_ticks(int fd, uint32_t weight) {
  const unsigned slot = internal::g_perf_fd_slot[fd].load(std::memory_order_relaxed);
  if (slot != 0) internal::g_clock_ticks[slot - 1].fetch_add(weight, std::memory_order_relaxed);
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
// Before the CPU-time clocks stop for good (the last sink goes, a thread
// ends): the kernel reports a CPU-time timer's expirations only when it
// checks the timer, at a tick that finds the thread running, and on a busy
// machine that can be 100 ms late (12 signals in a CPU-second seen). What
// each thread ran since its last reported expiry, in whole periods, is
// delivered at the PC of its last sample — where the thread was last seen
// — so counts keep measuring CPU time. tid 0: every thread. Not for a
// clock that keeps running (the kernel would report the same time again).
void flush_unreported_ticks(pid_t only_tid = 0);
void ignore_current_thread();
// Clocks for threads in /proc/self/task that have none; the clocks of
// threads no longer there released (thread_finder.h).
void sync_with_task_list();
// exec: stop every clock and discard a pending signal; and the way back.
void suspend_for_exec();
void resume_after_exec();
// fork, in the child: forget the parent's clocks, sample the only thread.
void reset_in_child();
// The program is about to close every descriptor in [first, last] and one
// of them is a perf counter of ours: every thread moves to CPU-time
// timers (whose clocks no close can reach). Returns true if it switched.
bool switch_to_cpu_timers(unsigned first, unsigned last);

ClockKind running_clock();
unsigned running_hz();
uint64_t running_period_ns();
std::string perf_fallback_reason();

}  // namespace profiling::sampler

#endif  // PROFIL_SAMPLER_THREAD_CLOCKS_H
