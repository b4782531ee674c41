// The wall clock's engine and its watcher thread (see wall_sampler.h).
#include "sampler/wall_sampler.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "base/signal_mask.h"
#include "base/unique_fd.h"
#include "sampler/sampler.h"
#include "sampler/sinks.h"

namespace profiling::sampler {
namespace {

constinit WallEngine g_wall;

// The watcher runs while its generation is the current one; stopping (or a
// new start) moves the generation on and the old watcher exits on waking.
std::atomic<uint64_t> g_generation{0};
std::atomic<uint64_t> g_period_ns{10'000'000};
std::atomic<bool> g_paused{false};
bool g_active = false;  // control lock

uint64_t monotonic_ns() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(ts.tv_nsec);
}

timespec to_timespec(uint64_t ns) {
  return timespec{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
}

// One sample of `weight` periods at the pc of every other thread that is off
// the CPU now.
void sample_blocked_threads(pid_t self, uint32_t weight) {
  DIR* dir = ::opendir("/proc/self/task");
  if (dir == nullptr) return;
  while (dirent* entry = ::readdir(dir)) {
    const long tid = std::strtol(entry->d_name, nullptr, 10);
    if (tid <= 0 || tid == self) continue;
    char path[64];
    std::snprintf(path, sizeof path, "/proc/self/task/%ld/syscall", tid);
    base::UniqueFd fd(::open(path, O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) continue;  // the thread has just exited
    char text[256];
    const ssize_t n = ::read(fd.get(), text, sizeof text - 1);
    if (n <= 0) continue;
    const uint64_t pc = blocked_pc_from_syscall_text(std::string_view(text, static_cast<size_t>(n)));
    if (pc == 0) continue;
    g_handlers_in_flight.fetch_add(1, std::memory_order_seq_cst);
    deliver(pc, weight);
    g_handlers_in_flight.fetch_sub(1, std::memory_order_release);
  }
  ::closedir(dir);
}

void* watch(void* opaque) {
  const uint64_t generation = reinterpret_cast<uintptr_t>(opaque);
  // Not itself sampled, and no home for the program's process-directed
  // signals (they go to the program's own threads).
  thread_not_sampled();
  // Started blocking every signal (launch); the pthread_create wrapper's
  // start may have unblocked SIGPROF for a program thread (program_mask.h):
  // blocked again, raw, so none of the program's signals comes here.
  sigset_t all;
  sigfillset(&all);
  base::raw_sigprocmask(SIG_SETMASK, &all, nullptr);
  const pid_t self = static_cast<pid_t>(::syscall(SYS_gettid));

  uint64_t last = monotonic_ns();
  uint64_t next = last;
  int64_t remainder = 0;
  while (g_generation.load(std::memory_order_acquire) == generation) {
    const uint64_t period = g_period_ns.load(std::memory_order_relaxed);
    next += period;
    const timespec until = to_timespec(next);
    while (::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, nullptr) == EINTR) {
    }
    if (g_generation.load(std::memory_order_acquire) != generation) break;
    // The weight is the wall time since the previous wake-up in periods,
    // the remainder carried: a late wake-up stands for the time it missed.
    const uint64_t now = monotonic_ns();
    const int64_t elapsed = static_cast<int64_t>(now - last) + remainder;
    const int64_t periods = (elapsed + static_cast<int64_t>(period / 2)) / static_cast<int64_t>(period);
    remainder = elapsed - periods * static_cast<int64_t>(period);
    last = now;
    if (next + period < now) next = now;  // far behind: no burst of catch-up wake-ups
    if (periods <= 0 || g_paused.load(std::memory_order_acquire)) continue;
    sample_blocked_threads(self, static_cast<uint32_t>(periods > 1'000'000 ? 1'000'000 : periods));
  }
  thread_exiting();  // its slot is free again
  return nullptr;
}

void launch() {
  const uint64_t generation = g_generation.fetch_add(1, std::memory_order_acq_rel) + 1;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 64 * 1024);
  pthread_t thread;
  // Born with every signal blocked (issue 20): blocked only once it ran,
  // the watcher could take a program's signal first and run its handler —
  // a SIGALRM handler's siglongjmp then jumped into the main thread's
  // context on the watcher's stack. The creating thread's own mask is put
  // back at once (the raw system call: libprofil interposes sigprocmask).
  sigset_t all, saved;
  sigfillset(&all);
  base::raw_sigprocmask(SIG_SETMASK, &all, &saved);
  const int created = pthread_create(&thread, &attr, watch, reinterpret_cast<void*>(static_cast<uintptr_t>(generation)));
  base::raw_sigprocmask(SIG_SETMASK, &saved, nullptr);
  if (created == 0) {
    pthread_setname_np(thread, "profil-wall");
  } else {
    std::fprintf(stderr, "profil: the wall clock's watcher thread could not start; blocked time is not sampled\n");
  }
  pthread_attr_destroy(&attr);
}

}  // namespace

uint64_t blocked_pc_from_syscall_text(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  if (text.empty() || text.starts_with("running")) return 0;
  const size_t space = text.rfind(' ');
  if (space == std::string_view::npos) return 0;  // a number alone: no registers
  std::string_view last = text.substr(space + 1);
  if (!last.starts_with("0x") || last.size() < 3 || last.size() > 18) return 0;
  uint64_t pc = 0;
  for (char c : last.substr(2)) {
    int digit;
    if (c >= '0' && c <= '9') digit = c - '0';
    else if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
    else return 0;
    pc = pc << 4 | static_cast<uint64_t>(digit);
  }
  return pc;
}

Engine& wall_engine() { return g_wall; }

int WallEngine::start(uint64_t period_ns, std::string* why) {
  CpuTimerEngine::start(period_ns, why);
  g_period_ns.store(period_ns, std::memory_order_relaxed);
  g_paused.store(false, std::memory_order_release);
  g_active = true;
  launch();
  return 0;
}

void WallEngine::stop() {
  CpuTimerEngine::stop();
  if (!g_active) return;
  g_active = false;
  g_generation.fetch_add(1, std::memory_order_acq_rel);
}

int WallEngine::fork_child(uint64_t period_ns, std::string* why) {
  CpuTimerEngine::fork_child(period_ns, why);
  if (g_active) launch();
  return 0;
}

void WallEngine::suspend_for_exec() { g_paused.store(true, std::memory_order_release); }

void WallEngine::resume_after_exec() { g_paused.store(false, std::memory_order_release); }

}  // namespace profiling::sampler
