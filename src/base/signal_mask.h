// The mask profil's own code runs under, and a scope that applies it.
// ASYNC-SIGNAL-SAFE: everything here (the rt_sigprocmask system call
// itself, never glibc's sigprocmask, which libprofil interposes).
//
// Why (issue 20): a program's handler that runs inside profil's code can
// jump out of it (siglongjmp from a SIGALRM handler, as interpreters and
// test harnesses do for timeouts) and abandon a dump half-written, or call
// back into code that is not reentrant. So profil's handlers and dumps run
// with every signal blocked but the synchronous ones: SIGSEGV and SIGBUS
// are how the fault-safe loads of the unwinder and the sinks recover
// (safe_access.h), and a blocked synchronous signal is not held back by
// the kernel but kills the process (force_sig_info resets it to SIG_DFL);
// SIGFPE, SIGILL, SIGTRAP and SIGSYS likewise (a seccomp SIGSYS trap is a
// program's sandbox emulating a call of ours: it must run).
#ifndef PROFIL_BASE_SIGNAL_MASK_H
#define PROFIL_BASE_SIGNAL_MASK_H

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <initializer_list>

namespace profiling::base {

// ASYNC-SIGNAL-SAFE. Every signal but the synchronous ones (above).
inline sigset_t asynchronous_signals() {
  sigset_t set;
  sigfillset(&set);
  for (int signo : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS}) sigdelset(&set, signo);
  return set;
}

// ASYNC-SIGNAL-SAFE. rt_sigprocmask itself: 0, or -1 with errno.
inline int raw_sigprocmask(int how, const sigset_t* set, sigset_t* old) {
  return static_cast<int>(::syscall(SYS_rt_sigprocmask, how, set, old, sizeof(unsigned long)));
}

// ASYNC-SIGNAL-SAFE. Blocks the asynchronous signals for its scope, then
// puts the thread's mask back as it was (inside a handler of ours, which
// runs with them blocked already, it changes nothing).
class AsyncSignalsBlocked {
 public:
  AsyncSignalsBlocked() {
    const sigset_t block = asynchronous_signals();
    raw_sigprocmask(SIG_BLOCK, &block, &saved_);
  }
  ~AsyncSignalsBlocked() { raw_sigprocmask(SIG_SETMASK, &saved_, nullptr); }
  AsyncSignalsBlocked(const AsyncSignalsBlocked&) = delete;
  AsyncSignalsBlocked& operator=(const AsyncSignalsBlocked&) = delete;

 private:
  sigset_t saved_;
};

}  // namespace profiling::base

#endif  // PROFIL_BASE_SIGNAL_MASK_H
