// The slots kept in step with the process's threads as /proc/self/task
// lists them: every thread there attached when sampling starts, and later
// (the thread finder's passes, thread_finder.h) the threads created past
// the pthread_create wrapper attached and those gone released.
//
// NOT async-signal-safe: runs under the sampler's control lock.
#ifndef PROFIL_SAMPLER_TASK_SYNC_H
#define PROFIL_SAMPLER_TASK_SYNC_H

namespace profiling::sampler {

// Attaches every thread that exists now (the calling one alone when the
// list cannot be read).
void attach_listed_threads();
// Clocks for threads in /proc/self/task that have none; the clocks of
// threads no longer there released. Nothing while sampling is off or
// suspended for an exec.
void sync_with_task_list();

}  // namespace profiling::sampler

#endif  // PROFIL_SAMPLER_TASK_SYNC_H
