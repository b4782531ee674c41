// close, close_range, closefrom, dup2 and dup3, interposed: a program that closes
// every descriptor it did not open itself (daemons do, after fork:
// closefrom(3), or a loop of close) would otherwise close the perf
// counters that sample its threads, and get no sample more, silently.
// Before such a close, sampling moves to CPU-time timers (sampler.h,
// before_closing_descriptors), which no close reaches; then the close
// proceeds as the program asked. A raw close system call stays out of
// reach: the accounting then shows the time as unsampled (docs/run.md).
//
// close() is called from signal handlers (ours among them, the dump):
// the path that finds no counter of ours in the range is async-signal-
// safe (a load per descriptor, then glibc's call).
#include <dlfcn.h>
#include <linux/close_range.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <climits>

#include "runtime/export.h"
#include "runtime/process_hooks.h"
#include "sampler/sampler.h"

namespace profiling::runtime {
namespace {

using close_fn = int (*)(int);
using close_range_fn = int (*)(unsigned, unsigned, int);
using closefrom_fn = void (*)(int);
using dup2_fn = int (*)(int, int);
using dup3_fn = int (*)(int, int, int);

// Resolved when the library is loaded: dlsym is not async-signal-safe, and
// close may first be called from a signal handler.
std::atomic<close_fn> g_real_close{nullptr};
std::atomic<close_range_fn> g_real_close_range{nullptr};
std::atomic<closefrom_fn> g_real_closefrom{nullptr};
std::atomic<dup2_fn> g_real_dup2{nullptr};
std::atomic<dup3_fn> g_real_dup3{nullptr};

__attribute__((constructor)) void resolve_close_functions() {
  g_real_close.store(reinterpret_cast<close_fn>(::dlsym(RTLD_NEXT, "close")), std::memory_order_release);
  g_real_close_range.store(reinterpret_cast<close_range_fn>(::dlsym(RTLD_NEXT, "close_range")),
                           std::memory_order_release);
  g_real_closefrom.store(reinterpret_cast<closefrom_fn>(::dlsym(RTLD_NEXT, "closefrom")),
                         std::memory_order_release);
  g_real_dup2.store(reinterpret_cast<dup2_fn>(::dlsym(RTLD_NEXT, "dup2")), std::memory_order_release);
  g_real_dup3.store(reinterpret_cast<dup3_fn>(::dlsym(RTLD_NEXT, "dup3")), std::memory_order_release);
}

void before_closing(unsigned first, unsigned last) {
  if (process_owns_sampler()) sampler::before_closing_descriptors(first, last);
}

}  // namespace
}  // namespace profiling::runtime

using namespace profiling::runtime;

extern "C" {

PROFIL_EXPORT int close(int fd) {
  if (fd >= 0) before_closing(static_cast<unsigned>(fd), static_cast<unsigned>(fd));
  if (close_fn real = g_real_close.load(std::memory_order_acquire)) return real(fd);
  return static_cast<int>(::syscall(SYS_close, fd));
}

PROFIL_EXPORT int close_range(unsigned first, unsigned last, int flags) noexcept {
  // CLOSE_RANGE_CLOEXEC only marks them (ours are close-on-exec already).
  if (!(flags & CLOSE_RANGE_CLOEXEC) && first <= last) before_closing(first, last);
  if (close_range_fn real = g_real_close_range.load(std::memory_order_acquire)) return real(first, last, flags);
  return static_cast<int>(::syscall(SYS_close_range, first, last, flags));
}

PROFIL_EXPORT void closefrom(int lowfd) noexcept {
  if (lowfd < 0) lowfd = 0;
  before_closing(static_cast<unsigned>(lowfd), UINT_MAX);
  if (closefrom_fn real = g_real_closefrom.load(std::memory_order_acquire)) return real(lowfd);
  ::syscall(SYS_close_range, static_cast<unsigned>(lowfd), UINT_MAX, 0);
}

// dup2 and dup3 close their target first (dup2(2)): a daemon pointing
// descriptors at /dev/null over a range of numbers would close ours.
PROFIL_EXPORT int dup2(int oldfd, int newfd) noexcept {
  if (newfd >= 0 && newfd != oldfd) before_closing(static_cast<unsigned>(newfd), static_cast<unsigned>(newfd));
  if (dup2_fn real = g_real_dup2.load(std::memory_order_acquire)) return real(oldfd, newfd);
  return static_cast<int>(::syscall(SYS_dup2, oldfd, newfd));
}

PROFIL_EXPORT int dup3(int oldfd, int newfd, int flags) noexcept {
  if (newfd >= 0 && newfd != oldfd) before_closing(static_cast<unsigned>(newfd), static_cast<unsigned>(newfd));
  if (dup3_fn real = g_real_dup3.load(std::memory_order_acquire)) return real(oldfd, newfd, flags);
  return static_cast<int>(::syscall(SYS_dup3, oldfd, newfd, flags));
}

}  // extern "C"
