// Terminating and crash signals for the preload runtime: the profile is
// written from the signal handler, then the signal takes its ordinary course
// (the previous disposition is restored and the signal raised again), so the
// exit status, the core dump and the parent's view are what they would have
// been without profiling.
//
//   SIGTERM, SIGINT, SIGHUP, SIGQUIT       termination (SIGQUIT: core)
//   SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS crash (core)
//   SIGSEGV, SIGBUS, SIGPROF               the sampler's own fronts, whose
//                                          default action writes it too
//
// Handlers are installed only for signals whose disposition is still the
// default at start: an ignored SIGHUP (nohup) stays ignored.
//
// A program that installs its own handler for one of these signals later
// keeps it: sigaction() and signal() are interposed, the program's action is
// recorded (and reported back by later sigaction() calls), and our handler
// stays installed in front of it. When the signal arrives, the program's
// handler runs (with its mask and flags); if it returns, nothing else
// happens, exactly as without profiling. If the program's action is the
// default, the profile is written first. A handler that ends the process
// with exit() or _exit() writes the profile that way.
#ifndef PROFIL_RUNTIME_CRASH_H
#define PROFIL_RUNTIME_CRASH_H

namespace profiling::runtime {

// Puts the terminating signals whose disposition is still the default in
// front (sampler/signal_front.h) and makes the default action of every
// signal in front write the profile first. Not async-signal-safe; called by
// the preload constructor.
void install_crash_handlers();

}  // namespace profiling::runtime

#endif  // PROFIL_RUNTIME_CRASH_H
