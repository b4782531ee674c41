// The per-thread slots (thread_slots.h).
//
// ASYNC-SIGNAL-SAFE: slot_of_tid, current_tid, thread_cpu_clock,
// read_clock_ns, sampling_signal_blocked and perf_fd_still_open (system
// calls on signal-safety(7)'s list; errno is the caller's to keep: the
// handler and the dump save it). note_slot_used, find_clock and free_slot
// run under the sampler's control lock.
#include "sampler/thread_slots.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

#include "base/io.h"
#include "base/signal_mask.h"

namespace profiling::sampler {
namespace internal {
ThreadClock g_clocks[kMaxThreads];
std::atomic<uint64_t> g_clock_ticks[kMaxThreads];
std::atomic<bool> g_clock_flushed[kMaxThreads];
std::atomic<uint64_t> g_clock_last_pc[kMaxThreads];
std::atomic<uint64_t> g_clock_lost[kMaxThreads];
std::atomic<uint64_t> g_unattributed_lost{0};
std::atomic<uint16_t> g_tid_hint[kTidHints];
size_t g_slots_high = 0;
}  // namespace internal

using internal::g_clocks;
using internal::g_slots_high;

int slot_of_tid(pid_t tid) {
  const unsigned hint = internal::g_tid_hint[static_cast<uint32_t>(tid) % internal::kTidHints].load(
      std::memory_order_acquire);
  if (hint != 0 && g_clocks[hint - 1].tid == tid && g_clocks[hint - 1].in_use) return static_cast<int>(hint - 1);
  // Two live threads whose ids agree in the low 16 bits: look.
  for (size_t i = 0; i < g_slots_high; ++i)
    if (g_clocks[i].in_use && g_clocks[i].tid == tid) return static_cast<int>(i);
  return -1;
}

pid_t current_tid() { return static_cast<pid_t>(::syscall(SYS_gettid)); }

// The kernel's encoding (MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED) in
// include/linux/posix-timers.h), which pthread_getcpuclockid also uses.
clockid_t thread_cpu_clock(pid_t tid) {
  return static_cast<clockid_t>((~static_cast<unsigned>(tid) << 3) | 4 | 2);
}

int64_t read_clock_ns(clockid_t clock) {
  timespec ts{};
  if (::clock_gettime(clock, &ts) != 0) return -1;
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// (open, read, close, readlink, pthread_sigmask and clock_gettime are on
// signal-safety(7)'s list.) The calling thread asks pthread_sigmask;
// another thread's mask is the SigBlk line of /proc/self/task/TID/status
// (proc(5)), read with open/read.
bool sampling_signal_blocked(pid_t tid, bool self) {
  if (self) {
    // The kernel's mask from before profil's own block (a dump, a handler
    // of ours), not the program's view (program_mask.h): a thread whose
    // program "blocks" SIGPROF is sampled.
    if (const sigset_t* before = base::interrupted_mask()) return sigismember(before, kSamplingSignal) == 1;
    sigset_t mask;
    return base::raw_sigprocmask(SIG_BLOCK, nullptr, &mask) == 0 && sigismember(&mask, kSamplingSignal) == 1;
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

void note_slot_used(const ThreadClock* slot) {
  const size_t index = static_cast<size_t>(slot - g_clocks) + 1;
  if (index > g_slots_high) g_slots_high = index;
}

ThreadClock* find_clock(pid_t tid) {
  for (size_t i = 0; i < g_slots_high; ++i)
    if (g_clocks[i].in_use && g_clocks[i].tid == tid) return &g_clocks[i];
  return nullptr;
}

ThreadClock* free_slot() {
  for (ThreadClock& c : g_clocks)
    if (!c.in_use) return &c;
  return nullptr;
}

}  // namespace profiling::sampler
