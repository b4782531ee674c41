// What runs when a process ends in a way that skips atexit: _exit(),
// _Exit(), quick_exit() (interposed by libprofil.so) and the default action
// of a terminating or crash signal (sampler/signal_front.h). The preload
// runtime writes its dump there, the gmon runtime its gmon.out, so that,
// as the OpenBSD page has the kernel do, the file is written "whatever the
// way out" (issue 11). An ordinary exit() still writes through atexit and
// destructors; each writer is once-only, so a writer reached both ways
// writes once.
//
// Hooks must be ASYNC-SIGNAL-SAFE: they run inside signal handlers.
#ifndef PROFIL_RUNTIME_PROCESS_END_H
#define PROFIL_RUNTIME_PROCESS_END_H

namespace profiling::runtime {

enum class ProcessEnd { exit_call, signal };
using ProcessEndHook = void (*)(ProcessEnd how, int signo);

// Registers a hook (at most a handful; idempotent per hook). Not
// async-signal-safe; called at start-up.
void at_process_end(ProcessEndHook hook);

// Runs every hook, in registration order. ASYNC-SIGNAL-SAFE.
void run_process_end_hooks(ProcessEnd how, int signo);

// One line on stderr: "profil: <what>: could not write the profile at the
// process's end". ASYNC-SIGNAL-SAFE (write(2) only).
void report_end_write_failure(const char* what);

// Puts the terminating and crash signals whose disposition is still the
// default in front (SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGFPE, SIGILL, SIGABRT,
// SIGTRAP, SIGSYS, SIGSEGV, SIGBUS), so their default action runs the
// hooks first and then takes its course. Idempotent. Not async-signal-safe.
// Implemented in crash.cc.
void install_crash_handlers();

}  // namespace profiling::runtime

#endif  // PROFIL_RUNTIME_PROCESS_END_H
