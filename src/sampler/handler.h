// The sampling signal handler and the fault guard.
#ifndef PROFIL_SAMPLER_HANDLER_H
#define PROFIL_SAMPLER_HANDLER_H

namespace profiling::sampler {

// Installs the SIGPROF handler (once; it then stays, so a late signal from a
// timer being deleted can never take SIGPROF's default action and kill the
// process). Returns EBUSY when the program installed its own SIGPROF
// handler: we refuse rather than trample it (gperftools does the same).
// Not async-signal-safe.
int install_sampling_handler();

// Drops a SIGPROF pending for this thread or the process: setting a signal
// to SIG_IGN discards its pending instances (POSIX sigaction), then the
// handler is put back. Used before exec, after the clocks were stopped.
void discard_pending_sampling_signal();

}  // namespace profiling::sampler

#endif  // PROFIL_SAMPLER_HANDLER_H
