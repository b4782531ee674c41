// Sitting in front of a signal the program uses too.
//
// libprofil needs a few signals for itself: SIGPROF for its ticks, SIGSEGV
// and SIGBUS to survive a sampling buffer that goes away, and (under
// `profil run`) the terminating signals, to write the profile before the
// process ends. The program may use every one of them: coreutils sort
// catches SIGPROF to remove its temporary files, a self-profiling program
// runs its own ITIMER_PROF, a garbage collector catches SIGSEGV, a shell
// sends `kill -SEGV $$`. A profiler must not change what the program sees
// (issue 9), so for each such signal:
//   - libprofil's handler stays in the kernel;
//   - what the program asks for through sigaction()/signal() (interposed by
//     the shared library, src/runtime/crash.cc) is recorded here and
//     reported back to it, as if it had reached the kernel;
//   - a signal that is not libprofil's own (not a tick of one of our
//     clocks, not a fault in a sampling buffer) goes to front_dispatch(),
//     which does what the program's recorded action says: runs its handler
//     with its mask and flags, ignores the signal, or takes the default
//     action — after the default-action hook (the preload runtime writes
//     its profile there) — by restoring SIG_DFL and raising the signal
//     again, so the process ends with the status and core it would have had.
//
// Why demultiplex rather than move the sampler to a free real-time signal:
// real-time signals queue, one siginfo per perf overflow, so a thread that
// blocks signals (xz's workers do) would pile them up against the user's
// RLIMIT_SIGPENDING, which every process of that user shares; SIGPROF
// coalesces. And no real-time signal is reliably free (the Go runtime
// installs handlers for all of them), so demultiplexing would be needed
// anyway. Ours are recognized exactly: SI_TIMER carrying a pointer into our
// clock slots, or POLL_IN from one of our perf descriptors; everything else
// (kill, tgkill, sigqueue: si_code <= 0; ITIMER_PROF: SI_KERNEL; the
// program's own POSIX timers) is the program's.
//
// Two kinds of front:
//   - shared (SIGPROF, SIGSEGV, SIGBUS): the kernel action is ours, with
//     fixed flags and every asynchronous signal blocked (base/signal_mask.h,
//     issue 20: no handler of the program's may run, jump or exit inside
//     ours), whatever the program asks; front_dispatch gives the program's
//     handler the mask the kernel would have (the interrupted mask, its
//     sa_mask, the signal). SIGPROF keeps SA_RESTART; our ticks come only
//     to a thread that runs (program_mask.h), so none ends a wait.
//   - carried (the terminating signals of the preload runtime): the kernel
//     action is our handler with the program's own flags and mask (a ^C
//     handler installed without SA_RESTART still interrupts read()), and an
//     ignored signal is ignored in the kernel, so it interrupts nothing.
#ifndef PROFIL_SAMPLER_SIGNAL_FRONT_H
#define PROFIL_SAMPLER_SIGNAL_FRONT_H

#include <signal.h>

namespace profiling::sampler {

using SignalHandler = void (*)(int, siginfo_t*, void*);

enum class FrontKind { shared, carried };

// NOT async-signal-safe (called at start or under the sampler's control
// lock). Puts `ours` in front of signo; the action the kernel had becomes the
// program's recorded action. `shared_flags` (SA_RESTART, SA_ONSTACK,
// SA_NODEFER...) are used for a shared front. A signal already in front is
// left as it is. Returns 0 or an errno value.
int front_install(int signo, SignalHandler ours, FrontKind kind, int shared_flags = 0);

// ASYNC-SIGNAL-SAFE: is libprofil in front of signo?
bool front_managed(int signo);

// The program's sigaction(): for a signal in front, records and reports the
// program's action; otherwise straight to the kernel. ASYNC-SIGNAL-SAFE, as
// sigaction() is.
int front_sigaction(int signo, const struct sigaction* action, struct sigaction* old);

// ASYNC-SIGNAL-SAFE: does the program have a handler (not SIG_DFL/SIG_IGN)?
bool front_program_has_handler(int signo);

// ASYNC-SIGNAL-SAFE: give a signal that is not libprofil's to the program's
// recorded action (see above). Called from our handlers only.
void front_dispatch(int signo, siginfo_t* info, void* context);

// Called (ASYNC-SIGNAL-SAFE) before the default action of any signal in
// front is taken: the preload runtime writes its profile. nullptr removes it.
using DefaultActionHook = void (*)(int signo);
void set_default_action_hook(DefaultActionHook hook);

// exec: a signal the program ignores must be ignored by the new image too
// (execve(2) keeps SIG_IGN), so the kernel gets SIG_IGN for it before the
// exec; a failed exec puts our handlers back. Not async-signal-safe.
void front_before_exec();
void front_after_failed_exec();

// The sampler steps aside for good (a seccomp filter that would kill what
// it still does, runtime/seccomp_filter.h): the kernel gets the program's
// own action for every signal in front, and from then on sigaction() is
// the kernel's alone. Not async-signal-safe.
void front_step_aside();

// glibc's sigaction under its other public name, which the interposed
// sigaction() never shadows (dynamic and static programs alike).
int real_sigaction(int signo, const struct sigaction* action, struct sigaction* old);

}  // namespace profiling::sampler

#endif  // PROFIL_SAMPLER_SIGNAL_FRONT_H
