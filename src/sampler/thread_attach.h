// A thread's slot (thread_slots.h) taken and given back: the running
// engine (running_engine.h) creates, arms and frees what samples the
// thread, and the accounting (unsampled.h) closes the thread's books.
//
// NOT async-signal-safe: all of it runs under the sampler's control lock.
#ifndef PROFIL_SAMPLER_THREAD_ATTACH_H
#define PROFIL_SAMPLER_THREAD_ATTACH_H

#include <sys/types.h>

#include "sampler/thread_slots.h"

namespace profiling::sampler {

// Creates and arms the clock of thread tid. false when the thread is gone
// or no slot is left.
bool attach(pid_t tid);
// Thread c loses its slot (it ended, sampling stops).
void release_clock(ThreadClock& c);
// Thread tid is one of ours (a watcher): its slot marks it, never sampled.
void ignore_thread(pid_t tid);

}  // namespace profiling::sampler

#endif  // PROFIL_SAMPLER_THREAD_ATTACH_H
