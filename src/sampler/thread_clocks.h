// The dispatcher: sampling started and stopped for the whole process with
// the configured clock's engine (engine.h), blind to which engine that is.
// Its parts, a file each:
//   thread_slots.h    the per-thread slots (the handler's and engines' view)
//   thread_attach.h   a thread's slot taken and given back
//   task_sync.h       the slots kept in step with /proc/self/task
//   unsampled.h       the accounting of CPU time no sample caught
//   running_engine.h  which engine runs, its fallbacks, its period
//   fork_exec.h       the clocks across exec and fork
//
// Only the functions marked ASYNC-SIGNAL-SAFE may be called from the handler.
#ifndef PROFIL_SAMPLER_THREAD_CLOCKS_H
#define PROFIL_SAMPLER_THREAD_CLOCKS_H

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "sampler/sampler.h"

namespace profiling::sampler {

// ASYNC-SIGNAL-SAFE: the running engine's samples not delivered yet, now
// (the ring's). wait: not called from a signal handler.
uint32_t drain_engine(bool wait);
// ASYNC-SIGNAL-SAFE: is a descriptor the running engine needs in [first,
// last]? (The program is about to close that range; engine.h.)
// live_descriptor_in_range counts only descriptors still open on what the
// engine opened, and forgets the ones the program closed with a raw system
// call.
bool descriptor_in_range(unsigned first, unsigned last);
bool live_descriptor_in_range(unsigned first, unsigned last);

// The rest is NOT async-signal-safe; all of it runs under the control lock.
// Starts sampling every thread of the process with the configured clock.
// Returns 0 or an errno value (EBUSY: the program handles SIGPROF itself).
int start_all_threads(const ClockSettings& settings);
void stop_all_threads();
bool sampling_running();
// Sample the calling thread too (it was created after start_all_threads).
void start_current_thread();
void stop_current_thread();
// Before the clocks stop for good (the last sink goes, a thread ends): what
// the engine had not reported yet is delivered (cpu_timer_engine.h).
// tid 0: every thread. Not for a clock that keeps running (the kernel would
// report the same time again).
void flush_unreported_ticks(pid_t only_tid = 0);
void ignore_current_thread();
// The program is about to close every descriptor in [first, last] and one
// of them is one the engine needs (perf-signal's counters): every thread
// moves to the cpu clock's CPU-time timers (whose clocks no close can
// reach). Returns true if it switched.
bool switch_to_cpu_timers(unsigned first, unsigned last);

// The running engine's deferred start failed (the perf ring's deferred
// opening, perf_ring.h; why: its reason): every thread moves to the
// engine's fallback, as if it had been refused at start.
void fall_back_from_refused_start(const std::string& why);

ClockKind running_clock();
// The clock this image started on (a later switch to CPU-time timers
// keeps it; a refused deferred start's fallback replaces it).
ClockKind start_clock();
unsigned running_hz();
std::string perf_fallback_reason();

}  // namespace profiling::sampler

#endif  // PROFIL_SAMPLER_THREAD_CLOCKS_H
