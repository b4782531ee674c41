// close, close_range and closefrom, interposed: a program that closes
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

// Resolved when the library is loaded: dlsym is not async-signal-safe, and
// close may first be called from a signal handler.
std::atomic<close_fn> g_real_close{nullptr};
std::atomic<close_range_fn> g_real_close_range{nullptr};
std::atomic<closefrom_fn> g_real_closefrom{nullptr};

__attribute__((constructor)) void resolve_close_functions() {
  g_real_close.store(reinterpret_cast<close_fn>(::dlsym(RTLD_NEXT, "close")), std::memory_order_release);
  g_real_close_range.store(reinterpret_cast<close_range_fn>(::dlsym(RTLD_NEXT, "close_range")),
                           std::memory_order_release);
  g_real_closefrom.store(reinterpret_cast<closefrom_fn>(::dlsym(RTLD_NEXT, "closefrom")),
                         std::memory_order_release);
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

}  // extern "C"
