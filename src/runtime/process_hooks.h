// Process events the sampler must follow: threads, fork, exec.
//
// libprofil interposes pthread_create (a new thread gets its own clock) and
// the exec family (the clocks stop and a pending sampling signal is dropped,
// so "profiling is turned off when one of the exec family of functions is
// executed" — Solaris profil(2) — and the new program never dies of SIGPROF,
// as it does after glibc's profil, whose ITIMER_PROF survives exec). Fork is
// followed with pthread_atfork: profiling stays on in parent and child.
//
// These interposers (exec_hooks.cc, thread_hooks.cc) are in libprofil.so
// only; libprofil.a, which static programs link, has the atfork handlers
// alone (src/CMakeLists.txt says why; sampler/thread_finder.h is what a
// static program has instead).
#ifndef PROFIL_RUNTIME_PROCESS_HOOKS_H
#define PROFIL_RUNTIME_PROCESS_HOOKS_H

namespace profiling::runtime {

// Registers the atfork handlers once. Every entry point that starts sampling
// calls it (a static link pulls this file in through that call).
void ensure_process_hooks();

// True in the process the sampler's state belongs to; false in a vfork
// child, which shares that state's memory under another pid and must not
// change it.
bool process_owns_sampler();

}  // namespace profiling::runtime

#endif  // PROFIL_RUNTIME_PROCESS_HOOKS_H
