// Per-thread sampling clocks (see thread_clocks.h).
//
// ASYNC-SIGNAL-SAFE: perf_sample_weight, perf_fd_in_range, unsampled_time,
// slot_of_tid, drain_engine and what they call (and the inline checks in
// thread_clocks.h).
// Everything else runs under the sampler's control lock.
#include "sampler/thread_clocks.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <cstring>

#include "base/io.h"
#include "base/raw_syscall.h"
#include "sampler/handler.h"
#include "sampler/perf_ring.h"
#include "sampler/sinks.h"
#include "sampler/thread_finder.h"
#include "sampler/wall_sampler.h"

namespace profiling::sampler {
namespace internal {
ThreadClock g_clocks[kMaxThreads];
std::atomic<uint16_t> g_perf_fd_slot[kMaxPerfFd];
std::atomic<uint64_t> g_clock_ticks[kMaxThreads];
std::atomic<uint64_t> g_clock_last_pc[kMaxThreads];
std::atomic<uint64_t> g_clock_lost[kMaxThreads];
std::atomic<uint64_t> g_unattributed_lost{0};
std::atomic<uint16_t> g_tid_hint[kTidHints];
}  // namespace internal

namespace {

using internal::g_clocks;
using internal::g_clock_ticks;
using internal::g_perf_fd_slot;
using internal::kMaxPerfFd;
using internal::kMaxThreads;

std::atomic<uint64_t> g_period_ns{10'000'000};
bool g_running = false;
bool g_suspended = false;
ClockKind g_clock = ClockKind::cpu;
unsigned g_hz = 100;
// Plain storage, constant-initialized: sampling can start before this
// library's dynamic initializers run (glibc's crti calls __gmon_start__, and
// so __monstartup, from libc's own _init).
char g_fallback_reason[256];

__thread uint32_t t_jitter_state __attribute__((tls_model("initial-exec")));

// The perf clock's bookkeeping for the thread the signal interrupted (the
// counter signals only its own thread: F_OWNER_TID).
struct PerfThreadState {
  uint64_t generation;  // which start_all_threads() the numbers belong to
  int fd;
  uint64_t last_count;  // task-clock ns at the previous sample
  uint64_t samples;     // signals seen on this counter
  int64_t remainder;    // ns not yet counted (may be negative)
};
__thread PerfThreadState t_perf_state __attribute__((tls_model("initial-exec")));

std::atomic<uint64_t> g_perf_generation{1};
constexpr uint64_t kPerfJitterEvery = 512;

pid_t current_tid() { return static_cast<pid_t>(::syscall(SYS_gettid)); }

// The CPU-time clock of any thread of this process, by thread id: the
// kernel's encoding (MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED) in
// include/linux/posix-timers.h), which pthread_getcpuclockid also uses.
clockid_t thread_cpu_clock(pid_t tid) {
  return static_cast<clockid_t>((~static_cast<unsigned>(tid) << 3) | 4 | 2);
}

// slot: the index of the clock in g_clocks, or -1 when fd is no longer ours.
void mark_perf_fd(int fd, long slot) {
  if (fd < 0 || fd >= kMaxPerfFd) return;
  g_perf_fd_slot[fd].store(static_cast<uint16_t>(slot + 1), std::memory_order_release);
}

// ---- accounting (sampler.h, "CPU time no sample caught") ----

// The gaps of threads whose clocks were released (the thread ended, or
// sampling restarted), by cause. Written under the control lock, read by
// the dump from any context.
struct EndedRow {
  std::atomic<uint64_t> cpu_ns{0};
  std::atomic<uint32_t> threads{0};
  std::atomic<int32_t> tids[kUnsampledTids];
};
EndedRow g_ended[kUnsampledCauses];
std::atomic<uint64_t> g_ended_noise_ns{0};

// ASYNC-SIGNAL-SAFE. -1 when the clock cannot be read (the thread is gone).
int64_t read_clock_ns(clockid_t clock) {
  timespec ts{};
  if (::clock_gettime(clock, &ts) != 0) return -1;
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// ASYNC-SIGNAL-SAFE (open, read, close, readlink, pthread_sigmask and
// clock_gettime are on signal-safety(7)'s list; errno is the caller's to
// keep: the dump saves it). Is the sampling signal blocked in thread tid? The
// calling thread asks pthread_sigmask; another thread's mask is the SigBlk
// line of /proc/self/task/TID/status (proc(5)), read with open/read.
bool sampling_signal_blocked(pid_t tid, bool self) {
  if (self) {
    sigset_t mask;
    return ::pthread_sigmask(SIG_BLOCK, nullptr, &mask) == 0 && sigismember(&mask, kSamplingSignal) == 1;
  }
  char path[64] = "/proc/self/task/";
  size_t n = std::strlen(path);
  n += base::format_decimal(static_cast<unsigned>(tid), path + n);
  std::memcpy(path + n, "/status", sizeof "/status");
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char text[4096];
  ssize_t got = ::read(fd, text, sizeof text - 1);
  ::close(fd);
  if (got <= 0) return false;
  text[got] = '\0';
  const char* line = std::strstr(text, "\nSigBlk:");
  if (line == nullptr) return false;
  line += sizeof "\nSigBlk:" - 1;
  while (*line == ' ' || *line == '\t') ++line;
  uint64_t mask = 0;
  for (; (*line >= '0' && *line <= '9') || (*line >= 'a' && *line <= 'f'); ++line)
    mask = mask << 4 | static_cast<uint64_t>(*line <= '9' ? *line - '0' : *line - 'a' + 10);
  return (mask >> (kSamplingSignal - 1)) & 1;
}

// ASYNC-SIGNAL-SAFE: is a perf counter still open on fd? The program may
// have closed it with a raw system call (past the interposed close), and
// the number may since name another file.
bool perf_fd_still_open(int fd) {
  char path[48] = "/proc/self/fd/";
  size_t n = std::strlen(path);
  path[n + base::format_decimal(static_cast<unsigned>(fd), path + n)] = '\0';
  char target[64];
  ssize_t got = ::readlink(path, target, sizeof target - 1);
  if (got <= 0) return false;
  target[got] = '\0';
  return std::strcmp(target, "anon_inode:[perf_event]") == 0;
}

void add_to_row(UnsampledRow& row, pid_t tid, uint64_t gap) {
  row.cpu_ns += gap;
  if (row.threads < kUnsampledTids) row.tids[row.threads] = tid;
  ++row.threads;
}

// ASYNC-SIGNAL-SAFE. The gap of clock c (index in g_clocks) now: false
// when its thread's clock cannot be read; *cause 0 when within the noise.
// *lost: the part of the gap the perf ring lost (ring_full).
bool measure_gap(const ThreadClock& c, size_t index, bool self, uint64_t* gap, uint32_t* cause, uint64_t* lost);


uint32_t next_random() {
  uint32_t x = t_jitter_state;
  if (x == 0) x = static_cast<uint32_t>(current_tid()) * 2654435761u | 1;
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  t_jitter_state = x;
  return x;
}

timespec to_timespec(uint64_t ns) {
  return timespec{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
}

long perf_event_open(perf_event_attr* attr, pid_t tid) {
  return ::syscall(SYS_perf_event_open, attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

int open_perf_counter(pid_t tid, uint64_t period_ns) {
  perf_event_attr attr{};
  attr.size = sizeof(attr);
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_TASK_CLOCK;
  attr.sample_period = period_ns;
  attr.disabled = 1;
  attr.exclude_kernel = 1;  // what perf_event_paranoid 2 allows unprivileged
  attr.exclude_hv = 1;
  int fd = static_cast<int>(perf_event_open(&attr, tid));
  if (fd < 0) return -errno;
  // Owner before O_ASYNC, so no overflow can signal anyone else.
  f_owner_ex owner{F_OWNER_TID, tid};
  if (::fcntl(fd, F_SETOWN_EX, &owner) != 0 || ::fcntl(fd, F_SETSIG, kSamplingSignal) != 0 ||
      ::fcntl(fd, F_SETFL, O_ASYNC | O_NONBLOCK) != 0) {
    int error = errno;
    ::close(fd);
    return -error;
  }
  return fd;
}

// One past the highest slot ever used: slots are taken lowest first, so the
// searches (one per new thread, and the thread finder's passes) stop here
// rather than walk all kMaxThreads.
size_t g_slots_high = 0;

void note_slot_used(const ThreadClock* slot) {
  const size_t index = static_cast<size_t>(slot - g_clocks) + 1;
  if (index > g_slots_high) g_slots_high = index;
}

ThreadClock* find_clock(pid_t tid) {
  for (size_t i = 0; i < g_slots_high; ++i)
    if (g_clocks[i].in_use && g_clocks[i].tid == tid) return &g_clocks[i];
  return nullptr;
}

// The clocks whose samples measure CPU time, thread by thread.
bool accounted_clock() {
  return g_clock == ClockKind::cpu || g_clock == ClockKind::perf || g_clock == ClockKind::perf_signal;
}

void add_to_ended(uint32_t cause, pid_t tid, uint64_t gap) {
  EndedRow& row = g_ended[cause - 1];
  const uint32_t n = row.threads.load(std::memory_order_relaxed);
  if (n < kUnsampledTids) row.tids[n].store(tid, std::memory_order_relaxed);
  row.cpu_ns.fetch_add(gap, std::memory_order_relaxed);
  row.threads.store(n + 1, std::memory_order_release);
}

// A clock released while its thread runs unsampled (blocked signals, a
// closed counter) keeps what it missed in g_ended.
void account_released(const ThreadClock& c) {
  if (!accounted_clock()) return;  // wall samples sleep too
  if (c.ignored) return;  // a watcher of ours: never sampled on purpose
  const size_t index = static_cast<size_t>(&c - g_clocks);
  uint64_t gap = 0, lost = 0;
  uint32_t cause = 0;
  if (!measure_gap(c, index, c.tid == current_tid(), &gap, &cause, &lost)) return;
  if (lost != 0) add_to_ended(static_cast<uint32_t>(UnsampledCause::ring_full), c.tid, lost);
  if (cause == 0) {
    g_ended_noise_ns.fetch_add(gap, std::memory_order_relaxed);
    return;
  }
  add_to_ended(cause, c.tid, gap);
}

void reset_accounting() {
  for (EndedRow& row : g_ended) {
    row.cpu_ns.store(0, std::memory_order_relaxed);
    row.threads.store(0, std::memory_order_relaxed);
  }
  g_ended_noise_ns.store(0, std::memory_order_relaxed);
  internal::g_unattributed_lost.store(0, std::memory_order_relaxed);
}

void release_clock(ThreadClock& c) {
  // The ring holds what the thread ran until it is read: read before the
  // thread's accounting is closed.
  if (g_clock == ClockKind::perf && !c.ignored) g_perf_ring.thread_detaching(c.tid);
  account_released(c);
  if (c.has_timer) ::timer_delete(c.timer);
  if (c.perf_fd >= 0) {
    mark_perf_fd(c.perf_fd, -1);
    // A raw close by the program may have freed the number for a file of
    // its own: that one is not ours to close.
    if (perf_fd_still_open(c.perf_fd)) ::close(c.perf_fd);
  }
  c.has_timer = false;
  c.perf_fd = -1;
  c.ignored = false;
  c.in_use = false;
  c.tid = 0;
}

void arm(ThreadClock& c, bool on) {
  const uint64_t period = g_period_ns.load(std::memory_order_relaxed);
  if (c.has_timer) {
    itimerspec spec{};
    if (on) spec.it_interval = spec.it_value = to_timespec(period);
    ::timer_settime(c.timer, 0, &spec, nullptr);
  }
  if (c.perf_fd >= 0) ::ioctl(c.perf_fd, on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0);
}

// Creates and arms the clock of thread tid. false when the thread is gone
// or no slot is left.
bool attach(pid_t tid) {
  if (ThreadClock* stale = find_clock(tid)) {
    if (stale->ignored) return true;
    release_clock(*stale);  // tid reused
  }
  ThreadClock* slot = nullptr;
  for (ThreadClock& c : g_clocks)
    if (!c.in_use) {
      slot = &c;
      break;
    }
  if (slot == nullptr) return false;
  const size_t index = static_cast<size_t>(slot - g_clocks);
  const uint64_t period = g_period_ns.load(std::memory_order_relaxed);
  const int64_t cpu_now = read_clock_ns(thread_cpu_clock(tid));
  slot->cpu_at_attach_ns = cpu_now > 0 ? static_cast<uint64_t>(cpu_now) : 0;
  g_clock_ticks[index].store(0, std::memory_order_relaxed);
  internal::g_clock_last_pc[index].store(0, std::memory_order_relaxed);
  internal::g_clock_lost[index].store(0, std::memory_order_relaxed);
  if (g_clock == ClockKind::perf) {
    // The ring's events sample it already (inherited, or opened at start):
    // only the accounting slot.
  } else if (g_clock == ClockKind::perf_signal) {
    int fd = open_perf_counter(tid, period);
    if (fd < 0) return false;
    slot->perf_fd = fd;
    mark_perf_fd(fd, static_cast<long>(index));
  } else {
    sigevent event{};
    event.sigev_notify = SIGEV_THREAD_ID;
    event.sigev_signo = kSamplingSignal;
    event.sigev_value.sival_ptr = slot;
    event._sigev_un._tid = tid;
    timer_t timer;
    if (::timer_create(thread_cpu_clock(tid), &event, &timer) != 0) return false;
    slot->timer = timer;
    slot->has_timer = true;
  }
  slot->tid = tid;
  slot->in_use = true;
  note_slot_used(slot);
  internal::g_tid_hint[static_cast<uint32_t>(tid) % internal::kTidHints].store(static_cast<uint16_t>(index + 1),
                                                                              std::memory_order_release);
  if (g_clock == ClockKind::perf) g_perf_ring.thread_attached(tid);
  arm(*slot, true);
  return true;
}

std::string describe_perf_refusal(int error) {
  std::string reason = "perf_event_open(task-clock): ";
  reason += std::strerror(error);
  int fd = ::open("/proc/sys/kernel/perf_event_paranoid", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    char buf[16] = {};
    ssize_t n = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    if (n > 0) {
      while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ')) buf[--n] = '\0';
      reason += " (kernel.perf_event_paranoid = ";
      reason += buf;
      reason += ")";
    }
  }
  return reason;
}

// Can this process open a task-clock counter on itself?
int probe_perf(uint64_t period_ns) {
  int fd = open_perf_counter(current_tid(), period_ns);
  if (fd < 0) return -fd;
  ::close(fd);
  return 0;
}

}  // namespace

namespace {

// ASYNC-SIGNAL-SAFE. Out of perf_sample_weight, whose every-sample path
// then saves no registers.
__attribute__((noinline)) void move_perf_phase(int fd, uint64_t samples, uint64_t period, int64_t remainder) {
  if (samples % kPerfJitterEvery == 0) {
    const int64_t quarter = static_cast<int64_t>(period / 4);
    int64_t next = static_cast<int64_t>(period) - remainder +
                   static_cast<int64_t>(next_random() % static_cast<uint64_t>(2 * quarter + 1)) - quarter;
    if (next < 10'000) next = 10'000;  // the kernel's floor for software events
    uint64_t next_period = static_cast<uint64_t>(next);
    base::raw_ioctl(fd, PERF_EVENT_IOC_PERIOD, &next_period);
  } else if (samples > 1) {
    uint64_t plain = period;
    base::raw_ioctl(fd, PERF_EVENT_IOC_PERIOD, &plain);
  }
}

}  // namespace

uint32_t perf_sample_weight(int fd) {
  // The counter says exactly how much task-clock ran since the thread's last
  // sample; the weight is that in periods, rounded, with the signed
  // remainder carried over, so a late, early or coalesced signal loses no
  // time.
  uint64_t now = 0;
  if (base::raw_read(fd, &now, sizeof now) != static_cast<long>(sizeof now)) return 1;
  const uint64_t period = g_period_ns.load(std::memory_order_relaxed);
  const uint64_t generation = g_perf_generation.load(std::memory_order_relaxed);
  PerfThreadState& st = t_perf_state;
  if (st.generation != generation || st.fd != fd || now < st.last_count)
    st = PerfThreadState{generation, fd, 0, 0, 0};
  const int64_t elapsed = static_cast<int64_t>(now - st.last_count) + st.remainder;
  int64_t periods = (elapsed + static_cast<int64_t>(period / 2)) / static_cast<int64_t>(period);
  if (periods < 0) periods = 0;
  st.remainder = elapsed - periods * static_cast<int64_t>(period);
  st.last_count = now;
  ++st.samples;
  // Jitter: every 512th sample of a thread moves the phase of its samples by
  // up to a quarter period. Changing the period restarts the counter's
  // timer, and the kernel then drops a few overflows (measured: jittering
  // at every 32nd sample delivered 84 % of 4 kHz, none 99 %), so the phase
  // moves rarely: enough that sampling cannot stay locked onto a loop of
  // the same period. An early signal after the change has weight 0.
  // The changed period persists, so the sample after a jittered one puts
  // the plain period back.
  if (st.samples % kPerfJitterEvery <= 1) [[unlikely]] move_perf_phase(fd, st.samples, period, st.remainder);
  return static_cast<uint32_t>(periods > 1'000'000 ? 1'000'000 : periods);
}

namespace {

// The perf ring engine, or perf-signal with the reason when no ring can be
// mapped (the user's locked memory for perf is used up, an old kernel).
ClockKind ring_fallback(const std::string& why) {
  std::snprintf(g_fallback_reason, sizeof g_fallback_reason,
                "%s; using a perf signal per sample and thread (perf-signal: threads that block signals are not "
                "sampled)",
                why.c_str());
  return ClockKind::perf_signal;
}


}  // namespace

int start_all_threads(const ClockSettings& settings) {
  if (g_running) return 0;
  int error = install_sampling_handler();
  if (error != 0) return error;
  g_hz = settings.hz;
  g_period_ns.store(1'000'000'000ull / settings.hz, std::memory_order_relaxed);
  g_clock = ClockKind::cpu;
  g_fallback_reason[0] = '\0';
  if (settings.requested == ClockKind::wall) {
    g_clock = ClockKind::wall;  // CPU-time timers for running threads, and the watcher
    start_wall_watcher(g_period_ns.load());
  } else if (settings.requested != ClockKind::cpu) {
    // The ring first (no probe: a process pays its perf_event_open calls
    // at every start); perf-signal, then cpu, when it cannot run.
    std::string ring_refusal;
    if (settings.requested != ClockKind::perf_signal &&
        g_perf_ring.start(g_period_ns.load(std::memory_order_relaxed), &ring_refusal) == 0) {
      g_clock = ClockKind::perf;
    } else if (int perf_error = probe_perf(g_period_ns.load()); perf_error != 0) {
      std::snprintf(g_fallback_reason, sizeof g_fallback_reason, "%s; using per-thread CPU-time timers",
                    describe_perf_refusal(perf_error).c_str());
    } else {
      g_clock = settings.requested == ClockKind::perf_signal ? ClockKind::perf_signal : ring_fallback(ring_refusal);
    }
  }
  g_running = true;
  g_suspended = false;
  g_perf_generation.fetch_add(1, std::memory_order_relaxed);
  // Threads that exist now; threads created later attach themselves
  // (start_current_thread, from the pthread_create wrapper).
  if (DIR* dir = ::opendir("/proc/self/task")) {
    while (dirent* entry = ::readdir(dir)) {
      if (entry->d_name[0] == '.') continue;
      pid_t tid = static_cast<pid_t>(std::atoi(entry->d_name));
      if (tid > 0) attach(tid);
    }
    ::closedir(dir);
  } else {
    attach(current_tid());
  }
  // Without the pthread_create wrapper (a static program), threads created
  // from now on are found by the thread finder.
  start_thread_finder();
  return 0;
}

void stop_all_threads() {
  for (ThreadClock& c : g_clocks)
    if (c.in_use && !c.ignored) release_clock(c);
  g_perf_ring.stop();
  stop_wall_watcher();
  g_running = false;
}

bool sampling_running() { return g_running; }

void start_current_thread() {
  if (g_running && !g_suspended) attach(current_tid());
}

void stop_current_thread() {
  if (ThreadClock* c = find_clock(current_tid())) {
    flush_unreported_ticks(c->tid);
    release_clock(*c);
  }
}

void flush_unreported_ticks(pid_t only_tid) {
  // perf's counter is read exactly. The wall clock samples running threads
  // with the same CPU-time timers (its watcher, which samples sleepers,
  // counts nothing here), so their unreported time is flushed too.
  if (!g_running || (g_clock != ClockKind::cpu && g_clock != ClockKind::wall)) return;
  const uint64_t period = g_period_ns.load(std::memory_order_relaxed);
  const pid_t self = current_tid();
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

void ignore_current_thread() {
  const pid_t tid = current_tid();
  ThreadClock* slot = find_clock(tid);
  if (slot != nullptr) {
    release_clock(*slot);
  } else {
    for (ThreadClock& c : g_clocks)
      if (!c.in_use) {
        slot = &c;
        break;
      }
    if (slot == nullptr) return;
  }
  slot->tid = tid;
  slot->ignored = true;
  slot->in_use = true;
  note_slot_used(slot);
}

void sync_with_task_list() {
  if (!g_running || g_suspended) return;
  // Static: 16 KiB each, and the finder runs on a small stack. The control
  // lock serializes the callers.
  static pid_t present[kMaxThreads];
  static bool has_clock[kMaxThreads];
  size_t count = 0;
  bool complete = true;
  DIR* dir = ::opendir("/proc/self/task");
  if (dir == nullptr) return;
  while (dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    const pid_t tid = static_cast<pid_t>(std::atoi(entry->d_name));
    if (tid <= 0) continue;
    if (count == kMaxThreads) {
      complete = false;
      break;
    }
    present[count++] = tid;
  }
  ::closedir(dir);
  std::sort(present, present + count);
  std::fill(has_clock, has_clock + count, false);
  // One pass over the slots: a clock whose thread is gone is released (only
  // when the list is complete), one whose thread is there is marked.
  for (size_t i = 0; i < g_slots_high; ++i) {
    ThreadClock& c = g_clocks[i];
    if (!c.in_use) continue;
    const pid_t* at = std::lower_bound(present, present + count, c.tid);
    if (at != present + count && *at == c.tid)
      has_clock[at - present] = true;
    else if (complete)
      release_clock(c);
  }
  for (size_t i = 0; i < count; ++i)
    if (!has_clock[i]) attach(present[i]);
}

void suspend_for_exec() {
  if (!g_running) return;
  g_suspended = true;
  pause_wall_watcher(true);
  if (g_clock == ClockKind::perf) g_perf_ring.suspend_for_exec();
  for (ThreadClock& c : g_clocks)
    if (c.in_use) arm(c, false);
  discard_pending_sampling_signal();
}

void resume_after_exec() {
  if (!g_running || !g_suspended) return;
  g_suspended = false;
  pause_wall_watcher(false);
  if (g_clock == ClockKind::perf) g_perf_ring.resume_after_exec();
  for (ThreadClock& c : g_clocks)
    if (c.in_use) arm(c, true);
}

void reset_in_child() {
  // POSIX timers are not inherited by a child; its copies of perf fds still
  // count the parent's threads, so close them (the parent keeps its own).
  for (ThreadClock& c : g_clocks) {
    if (!c.in_use) continue;
    if (c.perf_fd >= 0) {
      mark_perf_fd(c.perf_fd, -1);
      if (perf_fd_still_open(c.perf_fd)) ::close(c.perf_fd);
    }
    c = ThreadClock{};
  }
  reset_accounting();  // the parent's threads are not the child's
  if (g_running && g_clock == ClockKind::perf) {
    // The child's own events and rings (perf_ring.h: none are inherited).
    std::string why;
    if (g_perf_ring.fork_child(g_period_ns.load(std::memory_order_relaxed), &why) != 0) g_clock = ring_fallback(why);
  }
  if (g_running && !g_suspended) attach(current_tid());
  if (g_running) restart_wall_watcher_in_child();
  restart_thread_finder_in_child();
}

bool switch_to_cpu_timers(unsigned first, unsigned last) {
  // The ring's rings need no descriptor (perf_ring.h); only perf-signal's
  // counters are reached by a close.
  if (!g_running || g_clock != ClockKind::perf_signal || !live_perf_fd_in_range(first, last)) return false;
  const ClockSettings cpu{ClockKind::cpu, g_hz};
  // Each thread's perf interval is accounted as its clock is released; the
  // timers start a new one. The closing thread's own close then finds only
  // descriptors that are no longer ours.
  stop_all_threads();
  start_all_threads(cpu);
  std::snprintf(g_fallback_reason, sizeof g_fallback_reason,
                "the program closed the perf counters' descriptors; switched to per-thread CPU-time timers");
  return true;
}

bool perf_fd_in_range(unsigned first, unsigned last) {
  if (first >= static_cast<unsigned>(kMaxPerfFd)) return false;
  if (last >= static_cast<unsigned>(kMaxPerfFd)) last = kMaxPerfFd - 1;
  for (unsigned fd = first; fd <= last; ++fd)
    if (g_perf_fd_slot[fd].load(std::memory_order_acquire) != 0) return true;
  return false;
}

bool live_perf_fd_in_range(unsigned first, unsigned last) {
  if (first >= static_cast<unsigned>(kMaxPerfFd)) return false;
  if (last >= static_cast<unsigned>(kMaxPerfFd)) last = kMaxPerfFd - 1;
  bool live = false;
  for (unsigned fd = first; fd <= last; ++fd) {
    if (g_perf_fd_slot[fd].load(std::memory_order_acquire) == 0) continue;
    // Closed behind our back (a raw close): the number may be the
    // program's now. Forget it, so closing that file stays the program's
    // business (the slot keeps the number: the accounting names the cause).
    if (perf_fd_still_open(static_cast<int>(fd)))
      live = true;
    else
      mark_perf_fd(static_cast<int>(fd), -1);
  }
  return live;
}

namespace {

bool measure_gap(const ThreadClock& c, size_t index, bool self, uint64_t* gap, uint32_t* cause, uint64_t* lost) {
  const int64_t now = read_clock_ns(self ? CLOCK_THREAD_CPUTIME_ID : thread_cpu_clock(c.tid));
  if (now < 0) return false;
  const uint64_t cpu = static_cast<uint64_t>(now) > c.cpu_at_attach_ns ? static_cast<uint64_t>(now) - c.cpu_at_attach_ns : 0;
  const uint64_t period = g_period_ns.load(std::memory_order_relaxed);
  const uint64_t sampled = g_clock_ticks[index].load(std::memory_order_relaxed) * period;
  *gap = cpu > sampled ? cpu - sampled : 0;
  *cause = 0;
  *lost = 0;
  const bool ring = g_clock == ClockKind::perf;
  if (ring) {
    // What the ring dropped is a cause of its own, however small.
    const uint64_t dropped = internal::g_clock_lost[index].load(std::memory_order_relaxed) * period;
    *lost = dropped < *gap ? dropped : *gap;
    *gap -= *lost;
  }
  // On the ring each CPU's event of a thread keeps its own remainder, up
  // to a period each: the noise grows with the CPUs.
  const unsigned rings = ring && g_perf_ring.rings() > 1 ? g_perf_ring.rings() : 1;
  if (!unsampled_beyond_noise(*gap, cpu, period * rings)) return true;
  const int ring_fd = ring ? g_perf_ring.descriptor_of(c.tid) : -1;
  if (ring) {
    // A signal mask does not stop the ring: what it misses is a descriptor
    // closed (a thread that existed at start), or records lost to a full
    // ring that no PERF_RECORD_LOST reported yet.
    if (ring_fd >= 0 && !perf_fd_still_open(ring_fd))
      *cause = static_cast<uint32_t>(UnsampledCause::descriptor_closed);
    else if (g_perf_ring.overflowed())
      *cause = static_cast<uint32_t>(UnsampledCause::ring_full);
    else
      *cause = static_cast<uint32_t>(UnsampledCause::unknown);
    return true;
  }
  if (c.perf_fd >= 0 && !perf_fd_still_open(c.perf_fd))
    *cause = static_cast<uint32_t>(UnsampledCause::descriptor_closed);
  else if (sampling_signal_blocked(c.tid, self))
    *cause = static_cast<uint32_t>(UnsampledCause::signals_blocked);
  else if (c.has_timer)
    *cause = static_cast<uint32_t>(UnsampledCause::between_ticks);
  else
    *cause = static_cast<uint32_t>(UnsampledCause::unknown);
  return true;
}

}  // namespace

bool unsampled_beyond_noise(uint64_t gap_ns, uint64_t cpu_ns, uint64_t period_ns) {
  return gap_ns >= 2 * period_ns && gap_ns >= cpu_ns / 20;
}

void unsampled_time(Unsampled* out) {
  *out = Unsampled{};
  for (size_t i = 0; i < kUnsampledCauses; ++i) {
    const EndedRow& ended = g_ended[i];
    UnsampledRow& row = out->rows[i];
    row.threads = ended.threads.load(std::memory_order_acquire);
    row.cpu_ns = ended.cpu_ns.load(std::memory_order_relaxed);
    for (size_t k = 0; k < kUnsampledTids && k < row.threads; ++k)
      row.tids[k] = ended.tids[k].load(std::memory_order_relaxed);
  }
  out->noise_ns = g_ended_noise_ns.load(std::memory_order_relaxed);
  if (!accounted_clock()) return;
  // The ring's samples not read yet are sampled time: read them first (the
  // dump calls this before it writes the table).
  if (g_clock == ClockKind::perf) {
    g_perf_ring.drain(false);
    const uint64_t unattributed = internal::g_unattributed_lost.load(std::memory_order_relaxed);
    if (unattributed != 0)
      out->rows[static_cast<size_t>(UnsampledCause::ring_full) - 1].cpu_ns +=
          unattributed * g_period_ns.load(std::memory_order_relaxed);
  }
  // The live threads, read without the control lock (this runs from exit
  // paths and signal handlers): a thread ending meanwhile may be missed or
  // counted twice; its gap then shows in the dump's process-wide check.
  const pid_t self = current_tid();
  for (size_t index = 0; index < kMaxThreads; ++index) {
    const ThreadClock& c = g_clocks[index];
    if (!c.in_use || c.ignored) continue;
    uint64_t gap = 0, lost = 0;
    uint32_t cause = 0;
    if (!measure_gap(c, index, c.tid == self, &gap, &cause, &lost)) continue;
    if (lost != 0) add_to_row(out->rows[static_cast<size_t>(UnsampledCause::ring_full) - 1], c.tid, lost);
    if (cause == 0)
      out->noise_ns += gap;
    else
      add_to_row(out->rows[cause - 1], c.tid, gap);
  }
}

int slot_of_tid(pid_t tid) {
  const unsigned hint = internal::g_tid_hint[static_cast<uint32_t>(tid) % internal::kTidHints].load(
      std::memory_order_acquire);
  if (hint != 0 && g_clocks[hint - 1].tid == tid && g_clocks[hint - 1].in_use) return static_cast<int>(hint - 1);
  // Two live threads whose ids agree in the low 16 bits: look.
  for (size_t i = 0; i < g_slots_high; ++i)
    if (g_clocks[i].in_use && g_clocks[i].tid == tid) return static_cast<int>(i);
  return -1;
}

uint32_t drain_engine(bool wait) { return g_clock == ClockKind::perf ? g_perf_ring.drain(wait) : 0; }

ClockKind running_clock() { return g_clock; }
unsigned running_hz() { return g_hz; }
uint64_t running_period_ns() { return g_period_ns.load(std::memory_order_relaxed); }
std::string perf_fallback_reason() { return std::string(g_fallback_reason); }

}  // namespace profiling::sampler
