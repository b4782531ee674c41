// The sampling signal in the program's signal mask, kept apart from the
// kernel's (issue 20).
//
// profil's own SIGPROFs (each thread's drain timer on the perf ring, its
// CPU-time timer on the cpu clock) are thread-directed and come only while
// the thread runs, so they never end a blocking call early. But a thread
// that blocks SIGPROF would hold them back: xz's workers block every
// signal, a daemon's threads block all but the one that sigwaits, and the
// ring they fill would then be drained only by a process-directed signal,
// which the kernel gives to the main thread first, sleeping or not (a
// sleep(1) returned after 40 ms, pause() with EINTR). So while libprofil is
// in front of SIGPROF (signal_front.h), the program's sigprocmask and
// pthread_sigmask (interposed: runtime/signal_mask_hooks.cc) never block
// SIGPROF in the kernel: what the program asked for is kept here, per
// thread, and reported back to it. A SIGPROF of the program's own (a kill,
// its ITIMER_PROF) that reaches a thread which, as the program sees it,
// blocks SIGPROF is held for that thread and sent again to it (with its
// siginfo) when the program unblocks it; sigpending() shows it meanwhile.
//
// What still sees the kernel's mask: the raw rt_sigprocmask system call
// (the Go runtime, seccomp-minded code) and glibc's internal masking
// (posix_spawn, its pthread_create): those block SIGPROF for real, and
// profil's drain signals for that thread wait, as they did before. A mask
// the kernel has when a thread or an image starts is left as it is, never
// taken over: the Go runtime creates its threads with every signal blocked
// and unblocks them with the raw system call, and a SIGPROF of its own
// profiler held for a block that was no longer there lost half its
// samples. So across exec a program's "blocked" SIGPROF becomes the
// kernel's, as execve(2) keeps the mask.
//
// ASYNC-SIGNAL-SAFE: everything here (thread-local flags, the
// rt_tgsigqueueinfo system call).
#ifndef PROFIL_SAMPLER_PROGRAM_MASK_H
#define PROFIL_SAMPLER_PROGRAM_MASK_H

#include <signal.h>

namespace profiling::sampler {

// Is the program's SIGPROF kept apart from the kernel's mask (libprofil is
// in front of SIGPROF)?
bool program_mask_kept_apart();
// The calling thread, as the program sees it: does it block SIGPROF?
bool program_blocks_sampling_signal();
// Records it; unblocking sends a held SIGPROF again.
void set_program_blocks_sampling_signal(bool blocked);
// Is a program's SIGPROF held for the calling thread (sigpending)?
bool program_sampling_signal_held();
// A SIGPROF that is not ours (handler.cc): to the program's action, or
// held while the program blocks it in this thread.
void dispatch_program_sampling_signal(int signo, siginfo_t* info, void* context);
// The kernel's mask for SIGPROF in the calling thread (around an exec).
void set_kernel_blocks_sampling_signal(bool blocked);

}  // namespace profiling::sampler

#endif  // PROFIL_SAMPLER_PROGRAM_MASK_H
