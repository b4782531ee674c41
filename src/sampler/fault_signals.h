// SIGSEGV and SIGBUS open while profil's own code makes fault-safe loads,
// whatever the program's signal mask (issue 32).
//
// The fault-safe loads (base/safe_access.h) recover through the fault
// guard's handler: a load that faults raises SIGSEGV (or SIGBUS), which the
// guard turns into a returned fault. A synchronous fault the thread blocks
// is not held back by the kernel but kills the process (force_sig_info
// resets its action to SIG_DFL), and a handler of ours runs with the mask
// of the code it interrupted: so in a thread that blocks every signal — su
// waiting for its shell (sigfillset, SIG_BLOCK), a daemon's threads, a
// sigwait loop — the first load that faulted killed the program. su under
// `profil run --inside` died of SIGSEGV in 5 of 52 runs: its pam_end()
// unloads the PAM modules, and the perf ring's records taken before that,
// drained after it, sent the unwinder into their unmapped CFI.
//
// So each entry into code that loads that way (a sampling signal of ours,
// a drain of the perf ring) opens a FaultSignalsOpen scope: where the
// thread blocks SIGSEGV or SIGBUS, they are unblocked for the scope and
// blocked again at its end. A SIGSEGV or SIGBUS that is *sent* (kill,
// tgkill, sigqueue: si_code <= 0) and reaches the thread meanwhile — one
// pending before the scope opened, or sent during it — is not the
// program's to see yet: the guard holds it (hold_sent_fault_signal) and the
// scope's end sends it again to the thread with its siginfo, once blocked,
// so it stays pending as the program's mask asked (rt_sigqueueinfo(2): to
// itself any si_code is allowed). One held per signal: neither queues. A
// process-directed one comes back directed to this thread.
//
// ASYNC-SIGNAL-SAFE: everything here (thread-local state, raw
// rt_sigprocmask, rt_tgsigqueueinfo, getpid, gettid). Per thread; scopes
// nest (a drain inside a handler, a handler on top of a drain): each
// unblocks what the mask it was given blocks and blocks it again at its
// end; one given no mask inside another takes the outer one's word.
#ifndef PROFIL_SAMPLER_FAULT_SIGNALS_H
#define PROFIL_SAMPLER_FAULT_SIGNALS_H

#include <signal.h>

namespace profiling::sampler {

class FaultSignalsOpen {
 public:
  // mask: the thread's mask as the kernel has it now when the caller knows
  // it (a handler of ours: the interrupted mask, its own sa_mask holding no
  // synchronous signal); null: read with rt_sigprocmask.
  explicit FaultSignalsOpen(const sigset_t* mask = nullptr);
  ~FaultSignalsOpen();
  FaultSignalsOpen(const FaultSignalsOpen&) = delete;
  FaultSignalsOpen& operator=(const FaultSignalsOpen&) = delete;

 private:
  bool opened_[2] = {false, false};  // SIGSEGV, SIGBUS: unblocked by this scope
};

// The fault guard's question, for a SIGSEGV or SIGBUS that is not a
// fault-safe load's: is it a sent one that a FaultSignalsOpen scope let
// through while the program blocks it? Then it is held (true), and the
// guard returns.
bool hold_sent_fault_signal(int signo, const siginfo_t* info);

}  // namespace profiling::sampler

#endif  // PROFIL_SAMPLER_FAULT_SIGNALS_H
