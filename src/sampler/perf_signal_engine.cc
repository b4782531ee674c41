// The perf-signal clock's engine (perf_signal_engine.h).
//
// ASYNC-SIGNAL-SAFE: perf_sample_weight, PerfSignalEngine::gap_cause,
// PerfSignalEngine::descriptor_in_range and what they call (raw read and
// ioctl system calls, readlink, open/read/close of /proc); errno is the
// handler's to keep (it saves it). Everything else runs under the sampler's
// control lock.
#include "sampler/perf_signal_engine.h"

#include "base/file_limit.h"

#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/raw_syscall.h"
#include "sampler/running_engine.h"

namespace profiling::sampler {
namespace internal {
std::atomic<uint16_t> g_perf_fd_slot[kMaxPerfFd];
}  // namespace internal

namespace {

using internal::g_perf_fd_slot;
using internal::kMaxPerfFd;

constinit PerfSignalEngine g_perf_signal;

__thread uint32_t t_jitter_state __attribute__((tls_model("initial-exec")));

// The bookkeeping for the thread the signal interrupted (the counter
// signals only its own thread: F_OWNER_TID).
struct PerfThreadState {
  uint64_t generation;  // which start() the numbers belong to
  int fd;
  uint64_t last_count;  // task-clock ns at the previous sample
  uint64_t samples;     // signals seen on this counter
  int64_t remainder;    // ns not yet counted (may be negative)
};
__thread PerfThreadState t_perf_state __attribute__((tls_model("initial-exec")));

constinit std::atomic<uint64_t> g_perf_generation{1};
constexpr uint64_t kPerfJitterEvery = 512;

// slot: the index of the clock in g_clocks, or -1 when fd is no longer ours.
void mark_perf_fd(int fd, long slot) {
  if (fd < 0 || fd >= kMaxPerfFd) return;
  g_perf_fd_slot[fd].store(static_cast<uint16_t>(slot + 1), std::memory_order_release);
}

uint32_t next_random() {
  uint32_t x = t_jitter_state;
  if (x == 0) x = static_cast<uint32_t>(current_tid()) * 2654435761u | 1;
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  t_jitter_state = x;
  return x;
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
  // Out of the program's range where the limits allow (base/file_limit.h).
  // Where they do not (the hard limit is the soft one and may not be
  // raised), the counter would take one of the program's numbers: under a
  // limit of a few hundred, where a program may well use them all, it is
  // refused (issue 32: a child of a program that lowered RLIMIT_NOFILE to
  // 4 found fd 3 taken and its open() failed), and the thread falls to the
  // engine's fallback (CPU-time timers take no descriptor); under a larger
  // one it goes to the top of the range, as the ring's drain triggers do,
  // where only a program that opens every number meets it.
  fd = base::move_above_file_limit(fd);
  if (rlimit files{}; ::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY &&
                      static_cast<rlim_t>(fd) < files.rlim_cur) {
    constexpr rlim_t kSmallLimit = 512;
    const int top = files.rlim_cur > kSmallLimit ? ::fcntl(fd, F_DUPFD_CLOEXEC, static_cast<int>(
                                                               std::min<rlim_t>(files.rlim_cur, 65536) - 64))
                                                 : -1;
    ::close(fd);
    if (top < 0) return -EMFILE;
    fd = top;
  }
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

// Our counter on c's descriptor, closed: the child's copy, or the
// thread's own when it loses its slot.
void close_counter(ThreadClock& c) {
  if (c.perf_fd < 0) return;
  mark_perf_fd(c.perf_fd, -1);
  // A raw close by the program may have freed the number for a file of
  // its own: that one is not ours to close.
  if (perf_fd_still_open(c.perf_fd)) ::close(c.perf_fd);
  c.perf_fd = -1;
}

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

Engine& perf_signal_engine() { return g_perf_signal; }

uint32_t perf_sample_weight(int fd) {
  // The counter says exactly how much task-clock ran since the thread's last
  // sample; the weight is that in periods, rounded, with the signed
  // remainder carried over, so a late, early or coalesced signal loses no
  // time.
  uint64_t now = 0;
  if (base::raw_read(fd, &now, sizeof now) != static_cast<long>(sizeof now)) return 1;
  const uint64_t period = running_period_ns();
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

int PerfSignalEngine::start(uint64_t period_ns, std::string* why) {
  // Each thread's counter starts afresh: its state in the handler too.
  g_perf_generation.fetch_add(1, std::memory_order_relaxed);
  // Can this process open a task-clock counter on itself?
  const int fd = open_perf_counter(current_tid(), period_ns);
  if (fd < 0) {
    *why = describe_perf_refusal(-fd);
    return -fd;
  }
  ::close(fd);
  return 0;
}

bool PerfSignalEngine::thread_attached(ThreadClock& c) {
  // After the program's own seccomp filter: no new counter (sampler.h).
  if (!late_system_calls_allowed()) return false;
  const int fd = open_perf_counter(c.tid, running_period_ns());
  if (fd < 0) return false;
  c.perf_fd = fd;
  mark_perf_fd(fd, static_cast<long>(slot_index(c)));
  return true;
}

void PerfSignalEngine::arm_thread(ThreadClock& c, bool on) {
  if (c.perf_fd >= 0) ::ioctl(c.perf_fd, on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0);
}

void PerfSignalEngine::thread_released(ThreadClock& c) { close_counter(c); }

void PerfSignalEngine::forget_in_child(ThreadClock& c) { close_counter(c); }

UnsampledCause PerfSignalEngine::gap_cause(const ThreadClock& c, bool self) const {
  if (c.perf_fd >= 0 && !perf_fd_still_open(c.perf_fd)) return UnsampledCause::descriptor_closed;
  if (sampling_signal_blocked(c.tid, self)) return UnsampledCause::signals_blocked;
  // The counter's overflow in the kernel gives no signal (exclude_kernel):
  // the time since the thread's last signal (sampler.h, in_kernel).
  return UnsampledCause::in_kernel;
}

bool PerfSignalEngine::descriptor_in_range(unsigned first, unsigned last, bool live) {
  if (first >= static_cast<unsigned>(kMaxPerfFd)) return false;
  if (last >= static_cast<unsigned>(kMaxPerfFd)) last = kMaxPerfFd - 1;
  bool found = false;
  for (unsigned fd = first; fd <= last; ++fd) {
    if (g_perf_fd_slot[fd].load(std::memory_order_acquire) == 0) continue;
    if (!live) return true;
    // Closed behind our back (a raw close): the number may be the
    // program's now. Forget it, so closing that file stays the program's
    // business (the slot keeps the number: the accounting names the cause).
    if (perf_fd_still_open(static_cast<int>(fd)))
      found = true;
    else
      mark_perf_fd(static_cast<int>(fd), -1);
  }
  return found;
}

}  // namespace profiling::sampler
