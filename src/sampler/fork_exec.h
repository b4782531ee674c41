// The clocks across exec and fork: before an exec every clock stops and a
// pending sampling signal is discarded (a failed exec resumes them); a
// fork child forgets the parent's clocks and samples its only thread with
// the running engine, or that engine's fallback.
//
// NOT async-signal-safe: runs under the sampler's control lock (held
// across fork: control.cc, fork_prepare).
#ifndef PROFIL_SAMPLER_FORK_EXEC_H
#define PROFIL_SAMPLER_FORK_EXEC_H

namespace profiling::sampler {

// exec: stop every clock and discard a pending signal; and the way back.
void suspend_for_exec();
void resume_after_exec();
// fork, in the child: forget the parent's clocks, sample the only thread.
void reset_in_child();

}  // namespace profiling::sampler

#endif  // PROFIL_SAMPLER_FORK_EXEC_H
