// Per-thread sampling slots: one per thread of the process that is sampled
// (or ignored: a watcher of ours), in a fixed static array, each with its
// accounting (the ticks its samples carried) and what its engine keeps for
// it (a timer, a descriptor). What samples a thread is the selected
// engine's (engine.h): a POSIX CPU-time timer (SIGEV_THREAD_ID) per thread
// on the cpu and wall clocks (cpu_timer_engine.h), a perf_event_open
// task-clock counter per thread on perf-signal (perf_signal_engine.h),
// nothing per thread on the perf ring (perf_ring.h), which samples every
// thread without signals and needs only each thread's accounting slot here.
// A process-wide timer (ITIMER_PROF, glibc's choice) would interrupt
// whichever thread the kernel picks — idle threads in poll or epoll_wait
// among them, which return EINTR even under SA_RESTART — and skew shares
// between threads.
//
// The engines, the handler and the accounting read the slots; who takes
// and gives them back is thread_attach.h.
//
// ASYNC-SIGNAL-SAFE: everything here but note_slot_used, find_clock and
// free_slot, which run under the sampler's control lock.
#ifndef PROFIL_SAMPLER_THREAD_SLOTS_H
#define PROFIL_SAMPLER_THREAD_SLOTS_H

#include <signal.h>
#include <sys/types.h>
#include <time.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

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
// One past the highest slot ever used: slots are taken lowest first, so the
// searches (one per new thread, and the thread finder's passes) stop here
// rather than walk all kMaxThreads.
extern size_t g_slots_high;
}  // namespace internal

// The slot of thread tid, or -1.
int slot_of_tid(pid_t tid);
// A sample of the perf ring counted against its thread; lost samples too
// (perf_ring.h).
inline void count_ring_sample(int slot, uint64_t pc, uint32_t weight) {
  internal::g_clock_ticks[slot].fetch_add(weight, std::memory_order_relaxed);
  internal::g_clock_last_pc[slot].store(pc, std::memory_order_relaxed);
}
// Is the thread in slot one of ours, never sampled?
inline bool slot_is_ignored(int slot) { return internal::g_clocks[slot].ignored; }
inline void count_ring_lost_slot(int slot, uint64_t periods) {
  internal::g_clock_lost[slot].fetch_add(periods, std::memory_order_relaxed);
}
inline void count_ring_lost(pid_t tid, uint64_t periods) {
  const int slot = slot_of_tid(tid);
  (slot < 0 ? internal::g_unattributed_lost : internal::g_clock_lost[slot]).fetch_add(periods,
                                                                                     std::memory_order_relaxed);
}
// The index of slot c in g_clocks.
inline size_t slot_index(const ThreadClock& c) { return static_cast<size_t>(&c - internal::g_clocks); }

pid_t current_tid();
// The CPU-time clock of any thread of this process, by thread id.
clockid_t thread_cpu_clock(pid_t tid);
// -1 when the clock cannot be read (the thread is gone).
int64_t read_clock_ns(clockid_t clock);
// Is the sampling signal blocked in thread tid (self: the caller)?
bool sampling_signal_blocked(pid_t tid, bool self);
// Is a perf counter still open on fd? The program may have closed it with
// a raw system call (past the interposed close), and the number may since
// name another file.
bool perf_fd_still_open(int fd);

// ---- under the control lock ----
// Slot s is taken: the searches reach it.
void note_slot_used(const ThreadClock* slot);
// The slot in use by thread tid, or nullptr.
ThreadClock* find_clock(pid_t tid);
// The lowest slot not in use, or nullptr when every one is.
ThreadClock* free_slot();

}  // namespace profiling::sampler

#endif  // PROFIL_SAMPLER_THREAD_SLOTS_H
