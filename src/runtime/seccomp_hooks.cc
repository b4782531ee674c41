// prctl(PR_SET_SECCOMP) and syscall(SYS_seccomp), interposed: before a
// program installs a seccomp filter, the sampler opens what it deferred
// and stops issuing new kinds of system calls (sampler.h,
// before_seccomp_filter; issue 20: a filter killing on perf_event_open
// killed the program when the deferred rings opened 4 ms later from a
// timer's handler, and one killing on timer_create at its next thread).
// libseccomp installs filters through syscall(); sandboxes without it
// through prctl. A filter installed with the raw instruction (the Go
// runtime's own system calls) is not seen: docs/run.md. A filter that
// would refuse what the runtime still does makes it step aside
// (runtime/seccomp_filter.h).
//
// ASYNC-SIGNAL-SAFE: syscall() (libprofil's own code calls it from
// handlers): register moves and the instruction itself; before_seccomp_filter
// is reached only for the seccomp calls, which no handler makes.
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <cerrno>
#include <cstdarg>

#include "runtime/export.h"
#include "runtime/preload.h"

namespace {

// glibc's syscall(3): the instruction, -1 and errno for -4095..-1.
long raw_syscall6(long number, long a, long b, long c, long d, long e, long f) {
  long result;
  register long r10 asm("r10") = d;
  register long r8 asm("r8") = e;
  register long r9 asm("r9") = f;
  asm volatile("syscall"
               : "=a"(result)
               : "0"(number), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
               : "rcx", "r11", "memory");
  if (static_cast<unsigned long>(result) > -4096UL) {
    errno = static_cast<int>(-result);
    return -1;
  }
  return result;
}

}  // namespace

extern "C" PROFIL_EXPORT long syscall(long number, ...) {
  va_list args;
  va_start(args, number);
  long a[6];
  for (long& value : a) value = va_arg(args, long);
  va_end(args);
  if (number == SYS_seccomp && a[0] == SECCOMP_SET_MODE_FILTER)
    profiling::runtime::preload_before_seccomp_filter(reinterpret_cast<const struct sock_fprog*>(a[2]));
  return raw_syscall6(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}

extern "C" PROFIL_EXPORT int prctl(int option, ...) {
  va_list args;
  va_start(args, option);
  unsigned long a[4];
  for (unsigned long& value : a) value = va_arg(args, unsigned long);
  va_end(args);
  if (option == PR_SET_SECCOMP && a[0] == SECCOMP_MODE_FILTER)
    profiling::runtime::preload_before_seccomp_filter(reinterpret_cast<const struct sock_fprog*>(a[1]));
  return static_cast<int>(raw_syscall6(SYS_prctl, option, static_cast<long>(a[0]), static_cast<long>(a[1]),
                                       static_cast<long>(a[2]), static_cast<long>(a[3]), 0));
}
