// The signal mask and the ways a program takes blocked signals itself,
// interposed:
//   - sigprocmask and pthread_sigmask: while libprofil is in front of
//     SIGPROF, the program's SIGPROF is kept apart from the kernel's mask
//     (sampler/program_mask.h, issue 20): never blocked in the kernel, so
//     the drain timer of a thread that blocks every signal (xz's workers)
//     still reaches it while it runs, and no signal of profil's has to be
//     sent to the process (which the kernel gives to a sleeping main thread
//     first); what the program set is reported back to it. sigpending shows
//     a program's SIGPROF held meanwhile.
//   - signalfd, sigwait, sigwaitinfo and sigtimedwait: a program that
//     blocks every signal and takes them from a signalfd or a sigwait loop
//     (daemons do, with sigfillset) would read the sampler's SIGPROFs — a
//     drain timer's, a CPU-time timer's — which a profiler must not change
//     what the program sees. While sampling runs, SIGPROF is taken out of
//     such a set when the set holds other signals too; a set of SIGPROF
//     alone is the program's own use of it, left as it is (and then shares
//     the signal with the sampler, as a SIGPROF handler would).
//     The waits also drain the perf ring now and then: in a program that
//     blocks SIGPROF in every thread (its signal thread sigwaits, its
//     workers inherited the mask) no drain signal is ever delivered, and
//     the rings fill (seen: 3.9 s of a daemon's 4 s lost as "ring buffer
//     full"). The wait is made of sigtimedwait slices of 25 ms (doubled,
//     up to 1 s, while a drain finds nothing) with a drain between them;
//     the program sees what the one wait would have returned.
//
// ASYNC-SIGNAL-SAFE: all of them (sigprocmask is called from signal
// handlers; the others are async-signal-safe in glibc or system calls): a
// load and bit tests, then glibc's function; the opening itself is
// async-signal-safe (perf_ring.h).
#include <dlfcn.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <ctime>

#include "runtime/export.h"
#include "sampler/program_mask.h"
#include "sampler/sampler.h"

namespace profiling::runtime {
namespace {

using mask_fn = int (*)(int, const sigset_t*, sigset_t*);
using signalfd_fn = int (*)(int, const sigset_t*, int);
using sigwait_fn = int (*)(const sigset_t*, int*);
using sigwaitinfo_fn = int (*)(const sigset_t*, siginfo_t*);
using sigtimedwait_fn = int (*)(const sigset_t*, siginfo_t*, const timespec*);

// Resolved when the library is loaded (dlsym is not async-signal-safe).
std::atomic<mask_fn> g_real_sigprocmask{nullptr};
std::atomic<mask_fn> g_real_pthread_sigmask{nullptr};
std::atomic<signalfd_fn> g_real_signalfd{nullptr};
std::atomic<sigwait_fn> g_real_sigwait{nullptr};
std::atomic<sigwaitinfo_fn> g_real_sigwaitinfo{nullptr};
std::atomic<sigtimedwait_fn> g_real_sigtimedwait{nullptr};
using sigpending_fn = int (*)(sigset_t*);
std::atomic<sigpending_fn> g_real_sigpending{nullptr};

template <typename Function>
void resolve(std::atomic<Function>& slot, const char* name) {
  slot.store(reinterpret_cast<Function>(::dlsym(RTLD_NEXT, name)), std::memory_order_release);
}

__attribute__((constructor)) void resolve_mask_functions() {
  resolve(g_real_sigprocmask, "sigprocmask");
  resolve(g_real_pthread_sigmask, "pthread_sigmask");
  resolve(g_real_signalfd, "signalfd");
  resolve(g_real_sigwait, "sigwait");
  resolve(g_real_sigwaitinfo, "sigwaitinfo");
  resolve(g_real_sigtimedwait, "sigtimedwait");
  resolve(g_real_sigpending, "sigpending");
}

// The set a program takes signals from, less SIGPROF while the sampler
// uses it (above): *copy, or set itself.
const sigset_t* without_sampling_signal(const sigset_t* set, sigset_t* copy) {
  if (set == nullptr || sigismember(set, SIGPROF) != 1 || !sampler::sampling_signal_in_use()) return set;
  *copy = *set;
  sigdelset(copy, SIGPROF);
  return sigisemptyset(copy) ? set : copy;
}

// The mask change the program asked for, with SIGPROF kept apart
// (above): real is glibc's sigprocmask or pthread_sigmask, or the system
// call. Returns what it returns.
template <typename Real>
int change_mask(Real real, int how, const sigset_t* set, sigset_t* old) {
  if (!sampler::program_mask_kept_apart()) return real(how, set, old);
  const bool was = sampler::program_blocks_sampling_signal();
  bool now = was;
  sigset_t copy;
  const sigset_t* to_kernel = set;
  if (set != nullptr) {
    const bool listed = sigismember(set, SIGPROF) == 1;
    if (how == SIG_BLOCK) now = was || listed;
    else if (how == SIG_UNBLOCK) now = was && !listed;
    else if (how == SIG_SETMASK) now = listed;
    if (listed && how != SIG_UNBLOCK) {
      copy = *set;
      sigdelset(&copy, SIGPROF);
      to_kernel = &copy;
    }
  }
  const int result = real(how, to_kernel, old);
  if (result != 0) return result;
  // The kernel's mask blocks SIGPROF only where the kernel did it (a
  // handler's sa_mask) or a raw system call did: the program's too.
  if (old != nullptr && was) sigaddset(old, SIGPROF);
  if (set != nullptr && (how == SIG_BLOCK || how == SIG_UNBLOCK || how == SIG_SETMASK))
    sampler::set_program_blocks_sampling_signal(now);
  return 0;
}

int64_t monotonic_ns() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

// sigtimedwait (timeout: none, forever) in slices, the perf ring drained
// between them (above). Returns as sigtimedwait does.
int wait_draining(const sigset_t* set, siginfo_t* info, const timespec* timeout) {
  constexpr int64_t kFirstSliceNs = 25'000'000, kLongestSliceNs = 1'000'000'000;
  const int64_t deadline =
      timeout == nullptr ? -1 : monotonic_ns() + static_cast<int64_t>(timeout->tv_sec) * 1'000'000'000 + timeout->tv_nsec;
  int64_t slice_ns = kFirstSliceNs;
  while (true) {
    int64_t wait_ns = slice_ns;
    if (deadline >= 0) wait_ns = std::min(wait_ns, std::max<int64_t>(0, deadline - monotonic_ns()));
    const timespec slice{static_cast<time_t>(wait_ns / 1'000'000'000), static_cast<long>(wait_ns % 1'000'000'000)};
    int got;
    if (sigtimedwait_fn real = g_real_sigtimedwait.load(std::memory_order_acquire))
      got = real(set, info, &slice);
    else
      got = static_cast<int>(::syscall(SYS_rt_sigtimedwait, set, info, &slice, sizeof(uint64_t)));
    if (got > 0 || errno != EAGAIN) return got;
    slice_ns = sampler::drain_from_waiting_thread() != 0 ? kFirstSliceNs : std::min(2 * slice_ns, kLongestSliceNs);
    if (deadline >= 0 && monotonic_ns() >= deadline) {
      errno = EAGAIN;
      return -1;
    }
  }
}

// Before dlsym has run (another library's constructor): the system call.
int raw_mask(int how, const sigset_t* set, sigset_t* old) {
  return static_cast<int>(::syscall(SYS_rt_sigprocmask, how, set, old, sizeof(uint64_t)));
}

}  // namespace
}  // namespace profiling::runtime

using namespace profiling::runtime;

extern "C" {

PROFIL_EXPORT int sigprocmask(int how, const sigset_t* set, sigset_t* old) __THROW {
  mask_fn real = g_real_sigprocmask.load(std::memory_order_acquire);
  return change_mask(real != nullptr ? real : raw_mask, how, set, old);
}

PROFIL_EXPORT int pthread_sigmask(int how, const sigset_t* set, sigset_t* old) __THROW {
  if (mask_fn real = g_real_pthread_sigmask.load(std::memory_order_acquire)) return change_mask(real, how, set, old);
  // pthread_sigmask returns the error rather than setting errno.
  return change_mask([](int h, const sigset_t* s, sigset_t* o) { return raw_mask(h, s, o) == 0 ? 0 : errno; }, how,
                     set, old);
}

PROFIL_EXPORT int sigpending(sigset_t* set) __THROW {
  sigpending_fn real = g_real_sigpending.load(std::memory_order_acquire);
  const int result = real != nullptr ? real(set)
                                     : static_cast<int>(::syscall(SYS_rt_sigpending, set, sizeof(uint64_t)));
  if (result == 0 && profiling::sampler::program_sampling_signal_held()) sigaddset(set, SIGPROF);
  return result;
}

PROFIL_EXPORT int signalfd(int fd, const sigset_t* mask, int flags) __THROW {
  sigset_t copy;
  mask = without_sampling_signal(mask, &copy);
  if (signalfd_fn real = g_real_signalfd.load(std::memory_order_acquire)) return real(fd, mask, flags);
  return static_cast<int>(::syscall(SYS_signalfd4, fd, mask, sizeof(uint64_t), flags));
}

PROFIL_EXPORT int sigwait(const sigset_t* set, int* signo) {
  sigset_t copy;
  set = without_sampling_signal(set, &copy);
  if (profiling::sampler::wants_drains_from_waiting_threads()) {
    // sigwait(3): never EINTR; a signal number, or an error number.
    while (true) {
      const int got = wait_draining(set, nullptr, nullptr);
      if (got > 0) {
        *signo = got;
        return 0;
      }
      if (errno != EINTR) return errno;
    }
  }
  if (sigwait_fn real = g_real_sigwait.load(std::memory_order_acquire)) return real(set, signo);
  return ENOSYS;
}

PROFIL_EXPORT int sigwaitinfo(const sigset_t* set, siginfo_t* info) {
  sigset_t copy;
  set = without_sampling_signal(set, &copy);
  if (profiling::sampler::wants_drains_from_waiting_threads()) return wait_draining(set, info, nullptr);
  if (sigwaitinfo_fn real = g_real_sigwaitinfo.load(std::memory_order_acquire)) return real(set, info);
  errno = ENOSYS;
  return -1;
}

PROFIL_EXPORT int sigtimedwait(const sigset_t* set, siginfo_t* info, const timespec* timeout) {
  sigset_t copy;
  set = without_sampling_signal(set, &copy);
  if (profiling::sampler::wants_drains_from_waiting_threads()) return wait_draining(set, info, timeout);
  if (sigtimedwait_fn real = g_real_sigtimedwait.load(std::memory_order_acquire)) return real(set, info, timeout);
  errno = ENOSYS;
  return -1;
}

}  // extern "C"
