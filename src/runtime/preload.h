// The preload runtime: whole-process profiling of an unmodified program
// (`profil run`, docs/run.md).
//
// libprofil.so carries a constructor that does nothing unless the
// environment variable PROFIL_RUN_DIR is set (libprofil is also linked by
// ordinary programs, which must not be affected). When it is set, the
// constructor creates a pc table and starts sampling every thread, and every
// way the process can end writes `<PROFIL_RUN_DIR>/<progname>.<pid>.profraw`
// exactly once: exit() (a destructor), _exit()/_Exit() (interposed),
// terminating signals and crashes (process_end.h), and exec (the old image's
// samples, reason "exec").
#ifndef PROFIL_RUNTIME_PRELOAD_H
#define PROFIL_RUNTIME_PRELOAD_H

#include "format/profraw.h"

struct sock_fprog;

namespace profiling::unwind {
class StackTable;
}  // namespace profiling::unwind

namespace profiling::runtime {

// True in a process the preload runtime is profiling.
bool preload_active();

// Writes the profile now, once per process; later calls return at once.
// A call from another thread while one is writing waits for it (bounded).
// A provisional dump writes a complete file but lets the final one (at the
// real end) write it again. true when the profile was written.
// ASYNC-SIGNAL-SAFE.
// A checkpoint is a provisional dump written while the process runs; it
// never waits for another writer.
enum class DumpKind { final, provisional, checkpoint };
bool preload_dump(format::profraw::EndReason reason, int signo, DumpKind kind = DumpKind::final);

// Does this process have a thread besides the caller? (/proc/self/stat's
// num_threads; ASYNC-SIGNAL-SAFE.)
bool process_has_other_threads();

// Called by the exec wrappers (process_hooks.cc) after the clocks stopped:
// the old image's samples are written (reason exec), since exec would
// discard them. If the exec fails, the next dump writes the file again with
// everything sampled up to then.
void preload_before_exec();
// The exec about to happen starts a program the preload cannot enter
// (exec_hooks.cc): a ledger record says which and why, for profil run's
// summary. ASYNC-SIGNAL-SAFE.
void preload_note_not_entered(const char* program, format::profraw::NotEntered why);
void preload_after_failed_exec();
// The program is about to install a seccomp filter (runtime/seccomp_hooks.cc):
// the sampler stops issuing new kinds of system calls, and where the filter
// would refuse one the runtime still makes (runtime/seccomp_filter.h) the
// runtime writes the profile and steps aside for good. Not async-signal-safe.
void preload_before_seccomp_filter(const struct sock_fprog* filter);

// The calling thread's handler stack (sampler/handler_stack.h; the main
// thread at start, every thread the program creates from the
// pthread_create wrapper), also its alternate signal stack when it has
// none, so a stack overflow still writes the profile. Returns the memory
// to hand to remove_alternate_stack at the thread's end, or null when none
// could be made.
void* install_alternate_stack();

// The whole-stack table (PROFIL_STACKS=1), or null when stacks are off.
// For the dump writer: read it with StackTable::for_each.
unwind::StackTable* preload_stack_table();
void remove_alternate_stack(void* memory);

}  // namespace profiling::runtime

#endif  // PROFIL_RUNTIME_PRELOAD_H
