// The wall clock's engine and its watcher thread (see wall_sampler.h).
#include "sampler/wall_sampler.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "base/proc_syscall.h"
#include "base/signal_mask.h"
#include "base/unique_fd.h"
#include "sampler/sampler.h"
#include "sampler/sinks.h"
#include "unwind/memory.h"
#include "unwind/unwinder.h"

namespace profiling::sampler {
namespace {

constinit WallEngine g_wall;

// The watcher runs while its generation is the current one; stopping (or a
// new start) moves the generation on and the old watcher exits on waking.
std::atomic<uint64_t> g_generation{0};
std::atomic<uint64_t> g_period_ns{10'000'000};
std::atomic<bool> g_paused{false};
bool g_active = false;  // control lock

struct {
  std::atomic<uint64_t> rounds{0};
  std::atomic<uint64_t> blocked{0};
  std::atomic<uint64_t> walked{0};
  std::atomic<uint64_t> woke_during_walk{0};
  std::atomic<pid_t> watcher{0};
} g_wall_stats;

uint64_t monotonic_ns() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(ts.tv_nsec);
}

timespec to_timespec(uint64_t ns) {
  return timespec{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
}


// The blocked thread's stack from its pc and sp into its own tid's counts
// (issue 22), read fault-safely: another thread's stack, which it may leave
// (and even unmap, by ending) while we read. A thread whose text changed
// during the walk ran meanwhile: the frames read may be of two moments, so
// only its pc is kept (a stack of one frame, truncated), still as its own.
// In the handlers' in-flight section (the caller's): the tables stay.
void deliver_blocked_stack(unwind::StackTable* stacks, int fd, std::string_view before, base::BlockedRegisters regs,
                           uint32_t weight, int32_t tid) {
  uint32_t depth = g_stack_depth.load(std::memory_order_relaxed);
  if (depth > kMaxStackDepth) depth = kMaxStackDepth;
  uint64_t pcs[kMaxStackDepth];
  // A fault in the safe loads must reach the fault guard's landing pad: with
  // SIGSEGV blocked the kernel would kill the process instead
  // (force_sig_fault). Unblocked for the walk alone, so that a SIGSEGV or
  // SIGBUS sent to the process (kill(2)) all but never lands here.
  sigset_t faults, saved;
  sigemptyset(&faults);
  sigaddset(&faults, SIGSEGV);
  sigaddset(&faults, SIGBUS);
  base::raw_sigprocmask(SIG_UNBLOCK, &faults, &saved);
  const unwind::LiveMemory memory;
  const unwind::Stack stack =
      unwind::unwind(g_code_table.load(std::memory_order_acquire), memory, unwind::Registers{regs.pc, regs.sp, 0}, pcs, depth);
  base::raw_sigprocmask(SIG_SETMASK, &saved, nullptr);
  char text[256];
  const size_t n = base::read_syscall_text(fd, text);
  if (std::string_view(text, n) == before) {
    stacks->add(pcs, stack.depth, stack.truncated, weight, tid);
  } else {
    g_wall_stats.woke_during_walk.fetch_add(1, std::memory_order_relaxed);
    stacks->add(&regs.pc, 1, true, weight, tid);
  }
}

// One sample of `weight` periods at the pc (and, with stacks on, the stack)
// of every other thread that is off the CPU now.
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
    const size_t n = base::read_syscall_text(fd.get(), text);
    base::BlockedRegisters regs;
    if (!base::blocked_registers_from_syscall_text(std::string_view(text, n), &regs)) continue;
    g_wall_stats.blocked.fetch_add(1, std::memory_order_relaxed);
    g_handlers_in_flight.fetch_add(1, std::memory_order_seq_cst);
    deliver(regs.pc, weight);
    if (unwind::StackTable* stacks = g_stack_table.load(std::memory_order_acquire)) {
      g_wall_stats.walked.fetch_add(1, std::memory_order_relaxed);
      deliver_blocked_stack(stacks, fd.get(), std::string_view(text, n), regs, weight, static_cast<int32_t>(tid));
    }
    g_handlers_in_flight.fetch_sub(1, std::memory_order_release);
  }
  ::closedir(dir);
}

// The watcher opens and closes /proc files at every period. In the
// program's descriptor table those take numbers the program has just
// freed, and a program that closes a number twice (bash does with its
// pipes; harmless while it has one thread) closed the watcher's file, whose
// close then took the program's next file of that number: bash under
// --clock wall lost pipe ends ("cannot duplicate fd 4 to fd 1: Bad file
// descriptor") and its own profile. A fork child also inherited the
// watcher's files of the moment. So the watcher takes a table of its own
// (unshare(2) CLONE_FILES) and closes its copies of the program's files in
// it at once (raw close_range: the interposed one would take them for the
// program closing the sampler's counters), so that no pipe end stays open
// in it. Where unshare is refused (a seccomp filter), it keeps sharing.
void use_own_descriptor_table() {
  if (::unshare(CLONE_FILES) != 0) return;
  if (::syscall(SYS_close_range, 0U, ~0U, 0U) == 0) return;
  // close_range(2) is Linux 5.9: a raw close of every number below the limit.
  rlimit files{};
  const long limit = ::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < 65536 ? static_cast<long>(files.rlim_cur) : 65536;
  for (long fd = 0; fd < limit; ++fd) ::syscall(SYS_close, fd);
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
  use_own_descriptor_table();
  const pid_t self = static_cast<pid_t>(::syscall(SYS_gettid));
  g_wall_stats.watcher.store(self, std::memory_order_relaxed);

  uint64_t next = monotonic_ns();
  base::LookPeriods look(next);
  while (g_generation.load(std::memory_order_acquire) == generation) {
    const uint64_t period = g_period_ns.load(std::memory_order_relaxed);
    next += period;
    const timespec until = to_timespec(next);
    while (::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, nullptr) == EINTR) {
    }
    if (g_generation.load(std::memory_order_acquire) != generation) break;
    const uint64_t now = monotonic_ns();
    const int64_t periods = look.since_last(now, period);
    if (next + period < now) next = now;  // far behind: no burst of catch-up wake-ups
    if (periods <= 0 || g_paused.load(std::memory_order_acquire)) continue;
    g_wall_stats.rounds.fetch_add(1, std::memory_order_relaxed);
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

WallCounts wall_counts() {
  WallCounts counts;
  counts.rounds = g_wall_stats.rounds.load(std::memory_order_relaxed);
  counts.blocked = g_wall_stats.blocked.load(std::memory_order_relaxed);
  counts.walked = g_wall_stats.walked.load(std::memory_order_relaxed);
  counts.woke_during_walk = g_wall_stats.woke_during_walk.load(std::memory_order_relaxed);
  // schedstat's first field: the thread's time on a CPU in ns (the kernel's
  // Documentation/scheduler/sched-stats.rst), finer than stat's ticks.
  if (const pid_t watcher = g_wall_stats.watcher.load(std::memory_order_relaxed); watcher != 0) {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", static_cast<int>(watcher));
    if (FILE* file = std::fopen(path, "re")) {
      unsigned long long ns = 0;
      if (std::fscanf(file, "%llu", &ns) == 1) counts.watcher_cpu_ns = ns;
      std::fclose(file);
    }
  }
  return counts;
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
