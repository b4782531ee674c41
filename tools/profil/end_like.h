// profil run ends the way its program ended (issue 32): a program killed by
// a signal makes profil, once every profile is written, die of that same
// signal, so that its parent sees the program's wait status (WIFSIGNALED,
// WTERMSIG) and not an exit of 128 + N. A shell then prints "Killed" as it
// does for the plain run, Python's subprocess sees -9, not 137, and a
// shell loop interrupted by ^C stops as it would have (bash stops a loop
// only when the child died of SIGINT).
//
// NOT async-signal-safe: the command's main thread, after the command ran.
#ifndef PROFIL_TOOLS_END_LIKE_H
#define PROFIL_TOOLS_END_LIKE_H

namespace profiling::cli {

// The signal profil ends by once the command returns (0: none, exit with the
// command's status). The last call wins.
void end_by_signal_later(int signo);
int pending_end_signal();

// Ends the process by signo: its default action restored and unblocked,
// without a core file of profil's own (the program's core, if any, is the
// program's). Returns only where that signal does not end a process (its
// default is to ignore it); the caller then exits with fallback_status.
void end_by_signal(int signo);

}  // namespace profiling::cli

#endif  // PROFIL_TOOLS_END_LIKE_H
