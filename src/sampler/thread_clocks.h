// Per-thread sampling slots and the accounting of what they sampled. What
// samples a thread is the selected engine's (engine.h): a POSIX CPU-time
// timer (SIGEV_THREAD_ID) per thread on the cpu and wall clocks
// (cpu_timer_engine.h), a perf_event_open task-clock counter per thread on
// perf-signal (perf_signal_engine.h), nothing per thread on the perf ring
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

// One thread's slot: its accounting, and what its engine keeps for it (a
// timer, a descriptor). Lives in a fixed static array and is never freed, so a
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
// Every thread's slot: the handler checks a signal against them (inline: it
// runs at every sample).
inline constexpr size_t kMaxThreads = 4096;
extern ThreadClock g_clocks[kMaxThreads];
static_assert(kMaxThreads < 65535);
// Weighted ticks delivered per clock, since it was attached: what the
// accounting (unsampled_time) compares with the thread's CPU clock.
extern std::atomic<uint64_t> g_clock_ticks[kMaxThreads];
// Set when a CPU-time clock's unreported periods were delivered at its stop
// (flush_unreported_ticks): a signal of that timer the kernel sends later,
// its overrun covering the same time, is dropped (counted twice, a thread
// beside two busy loops had 578 ticks for 383 ms of CPU). Cleared at attach.
extern std::atomic<bool> g_clock_flushed[kMaxThreads];
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
// ASYNC-SIGNAL-SAFE: is a descriptor the running engine needs in [first,
// last]? (The program is about to close that range; engine.h.)
// live_descriptor_in_range counts only descriptors still open on what the
// engine opened, and forgets the ones the program closed with a raw system
// call.
bool descriptor_in_range(unsigned first, unsigned last);
bool live_descriptor_in_range(unsigned first, unsigned last);

// ---- for the engines ----
// The index of slot c in g_clocks.
inline size_t slot_index(const ThreadClock& c) { return static_cast<size_t>(&c - internal::g_clocks); }
// ASYNC-SIGNAL-SAFE.
pid_t current_tid();
// The CPU-time clock of any thread of this process, by thread id.
clockid_t thread_cpu_clock(pid_t tid);
// ASYNC-SIGNAL-SAFE. -1 when the clock cannot be read (the thread is gone).
int64_t read_clock_ns(clockid_t clock);
// ASYNC-SIGNAL-SAFE: is the sampling signal blocked in thread tid (self: the
// caller)?
bool sampling_signal_blocked(pid_t tid, bool self);
// ASYNC-SIGNAL-SAFE: is a perf counter still open on fd? The program may
// have closed it with a raw system call (past the interposed close), and
// the number may since name another file.
bool perf_fd_still_open(int fd);

// The rest is NOT async-signal-safe; all of it runs under the control lock.
// Starts sampling every thread of the process with the configured clock.
// Returns 0 or an errno value (EBUSY: the program handles SIGPROF itself).
int start_all_threads(const ClockSettings& settings);
void stop_all_threads();
bool sampling_running();
// Sample the calling thread too (it was created after start_all_threads).
void start_current_thread();
void stop_current_thread();
// Before the clocks stop for good (the last sink goes, a thread ends): what
// the engine had not reported yet is delivered (cpu_timer_engine.h).
// tid 0: every thread. Not for a clock that keeps running (the kernel would
// report the same time again).
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
// of them is one the engine needs (perf-signal's counters): every thread
// moves to the cpu clock's CPU-time timers (whose clocks no close can
// reach). Returns true if it switched.
bool switch_to_cpu_timers(unsigned first, unsigned last);

// The perf ring's deferred opening failed (perf_ring.cc; why: its reason):
// every thread moves to the ring's fallback, as if the ring had been
// refused at start.
void fall_back_from_refused_ring(const std::string& why);

ClockKind running_clock();
// The clock this image started on (a later switch to CPU-time timers
// keeps it; a refused deferred ring's fallback replaces it).
ClockKind start_clock();
unsigned running_hz();
uint64_t running_period_ns();
std::string perf_fallback_reason();

}  // namespace profiling::sampler

#endif  // PROFIL_SAMPLER_THREAD_CLOCKS_H
