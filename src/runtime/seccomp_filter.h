// Would a program's seccomp filter let the preload runtime go on? Before the
// filter is installed (runtime/seccomp_hooks.cc), its classic BPF program
// is run here over each system call the sampler and the dump may still
// make afterwards (a signal's return, masks, the dump's files, the timers'
// and counters' control, the wall clock's reads). A filter that answers
// anything but ALLOW or LOG for one of them would kill, trap or fail the
// program where it does not fail plainly (issue 32: a filter allowing only
// the program's own calls killed it with SIGSYS at its next SIGPROF's
// return), so the runtime then steps aside for that process: its profile
// is written at once and nothing of profil runs in it again.
//
// The calls are tried with zero arguments on x86-64: a filter that allows
// a call only for some arguments is taken to refuse it (the cautious side:
// the process is left alone, its profile ends at the filter).
//
// Not async-signal-safe (never reached from a handler): the prctl and
// syscall wrappers, in the thread installing the filter.
#ifndef PROFIL_RUNTIME_SECCOMP_FILTER_H
#define PROFIL_RUNTIME_SECCOMP_FILTER_H

#include <linux/filter.h>

namespace profiling::runtime {

// Whether the filter allows every system call the runtime may still make.
// A program it cannot run to the end (an unknown instruction, a read past
// seccomp_data, a jump out of it) counts as refusing.
bool seccomp_filter_allows_runtime(const struct sock_fprog* filter);

// The verdict of filter for system call nr with zero arguments on x86-64
// (SECCOMP_RET_*), or SECCOMP_RET_KILL_PROCESS where it cannot be run.
unsigned seccomp_filter_verdict(const struct sock_fprog* filter, int nr);

}  // namespace profiling::runtime

#endif  // PROFIL_RUNTIME_SECCOMP_FILTER_H
