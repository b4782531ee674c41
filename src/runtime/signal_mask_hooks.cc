// sigprocmask and pthread_sigmask, interposed: before a program blocks the
// sampling signal, the perf rings it defers (sampler/perf_ring.cc: a
// single-threaded process maps them only after its first period of CPU
// time, which most short processes never reach) are opened, because the
// timer that stands in for them until then is a signal, which the mask would
// hold back; the ring samples whatever the mask (issue 12).
//
// ASYNC-SIGNAL-SAFE: both (sigprocmask is called from signal handlers):
// a load and a bit test, then glibc's function; the opening itself is
// async-signal-safe (perf_ring.h).
#include <dlfcn.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "runtime/export.h"
#include "sampler/sampler.h"

namespace profiling::runtime {
namespace {

using mask_fn = int (*)(int, const sigset_t*, sigset_t*);

// Resolved when the library is loaded (dlsym is not async-signal-safe).
std::atomic<mask_fn> g_real_sigprocmask{nullptr};
std::atomic<mask_fn> g_real_pthread_sigmask{nullptr};

__attribute__((constructor)) void resolve_mask_functions() {
  g_real_sigprocmask.store(reinterpret_cast<mask_fn>(::dlsym(RTLD_NEXT, "sigprocmask")), std::memory_order_release);
  g_real_pthread_sigmask.store(reinterpret_cast<mask_fn>(::dlsym(RTLD_NEXT, "pthread_sigmask")),
                               std::memory_order_release);
}

void before_masking(int how, const sigset_t* set) {
  if (set != nullptr && how != SIG_UNBLOCK && sigismember(set, SIGPROF) == 1)
    sampler::before_blocking_sampling_signal();
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
  before_masking(how, set);
  if (mask_fn real = g_real_sigprocmask.load(std::memory_order_acquire)) return real(how, set, old);
  return raw_mask(how, set, old);
}

PROFIL_EXPORT int pthread_sigmask(int how, const sigset_t* set, sigset_t* old) __THROW {
  before_masking(how, set);
  if (mask_fn real = g_real_pthread_sigmask.load(std::memory_order_acquire)) return real(how, set, old);
  // pthread_sigmask returns the error rather than setting errno.
  return raw_mask(how, set, old) == 0 ? 0 : errno;
}

}  // extern "C"
