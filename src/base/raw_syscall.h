// System calls made with the `syscall` instruction itself, for the sampling
// signal handler. ASYNC-SIGNAL-SAFE: they never touch errno (a failure comes
// back as -errno) and are not cancellation points. glibc's read() is both a
// cancellation point and an errno writer: it costs the handler ~50
// instructions per sample around a one-instruction system call (callgrind,
// bench/sampler.sh).
//
// x86-64 Linux only: the number in rax, arguments in rdi, rsi, rdx; the
// kernel clobbers rcx and r11.
#ifndef PROFIL_BASE_RAW_SYSCALL_H
#define PROFIL_BASE_RAW_SYSCALL_H

#include <sys/syscall.h>

namespace profiling::base {

inline long raw_syscall3(long number, long a, long b, long c) {
  long result;
  asm volatile("syscall"
               : "=a"(result)
               : "0"(number), "D"(a), "S"(b), "d"(c)
               : "rcx", "r11", "memory");
  return result;
}

// ASYNC-SIGNAL-SAFE. Bytes read, or -errno.
inline long raw_read(int fd, void* buffer, unsigned long size) {
  return raw_syscall3(SYS_read, fd, reinterpret_cast<long>(buffer), static_cast<long>(size));
}

// ASYNC-SIGNAL-SAFE. 0 or more on success, or -errno.
inline long raw_ioctl(int fd, unsigned long request, void* argument) {
  return raw_syscall3(SYS_ioctl, fd, static_cast<long>(request), reinterpret_cast<long>(argument));
}

}  // namespace profiling::base

#endif  // PROFIL_BASE_RAW_SYSCALL_H
