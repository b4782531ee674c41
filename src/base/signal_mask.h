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

// ASYNC-SIGNAL-SAFE. The calling thread's mask from before profil's own
// code blocked signals (an AsyncSignalsBlocked scope; a handler of ours,
// which sets it from the interrupted context), or null outside them: what
// "does this thread block SIGPROF" means to the accounting, which would
// otherwise see only profil's own block (a dump said "signals blocked" of
// the thread that wrote it).
inline const sigset_t*& interrupted_mask() {
  static __thread const sigset_t* mask __attribute__((tls_model("initial-exec")));
  return mask;
}

// ASYNC-SIGNAL-SAFE. Sets interrupted_mask() for its scope, unless an outer
// scope did.
class InterruptedMaskScope {
 public:
  explicit InterruptedMaskScope(const sigset_t* mask) : outer_(interrupted_mask()) {
    if (outer_ == nullptr) interrupted_mask() = mask;
  }
  ~InterruptedMaskScope() { interrupted_mask() = outer_; }
  InterruptedMaskScope(const InterruptedMaskScope&) = delete;
  InterruptedMaskScope& operator=(const InterruptedMaskScope&) = delete;

 private:
  const sigset_t* outer_;
};

// ASYNC-SIGNAL-SAFE. Blocks the asynchronous signals for its scope, then
// puts the thread's mask back as it was (inside a handler of ours, which
// runs with them blocked already, it changes nothing).
class AsyncSignalsBlocked {
 public:
  AsyncSignalsBlocked() : outer_(interrupted_mask()) {
    const sigset_t block = asynchronous_signals();
    raw_sigprocmask(SIG_BLOCK, &block, &saved_);
    if (outer_ == nullptr) interrupted_mask() = &saved_;
  }
  ~AsyncSignalsBlocked() {
    interrupted_mask() = outer_;
    raw_sigprocmask(SIG_SETMASK, &saved_, nullptr);
  }
  AsyncSignalsBlocked(const AsyncSignalsBlocked&) = delete;
  AsyncSignalsBlocked& operator=(const AsyncSignalsBlocked&) = delete;

 private:
  sigset_t saved_;
  const sigset_t* outer_;
};

}  // namespace profiling::base

#endif  // PROFIL_BASE_SIGNAL_MASK_H
