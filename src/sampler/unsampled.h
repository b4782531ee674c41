// The accounting of CPU time no sample caught (sampler.h: Unsampled,
// unsampled_time): each slot's ticks against its thread's CPU clock, the
// gap's cause asked of the running engine. The threads that ended keep
// their gaps here; the live ones are measured when asked.
//
// ASYNC-SIGNAL-SAFE: unsampled_time (sampler.h) and what it calls (the
// engine's account_process and gap_cause), split_thread_gap. account_released and
// reset_accounting run under the sampler's control lock.
#ifndef PROFIL_SAMPLER_UNSAMPLED_H
#define PROFIL_SAMPLER_UNSAMPLED_H

#include <cstdint>

#include "sampler/thread_slots.h"

namespace profiling::sampler {

// A clock released while its thread runs unsampled (blocked signals, a
// closed counter) keeps what it missed.
void account_released(const ThreadClock& c);
// Forgets the threads that ended (a fork child: the parent's are not its).
void reset_accounting();

// ASYNC-SIGNAL-SAFE. One thread's unsampled time in the rows it goes to,
// each row once: what the ring lost (PERF_RECORD_LOST) is ring_full, and
// a rest whose cause is ring_full too joins it, so the thread counts once
// there (issue 32: "2697 threads" named for a program of 2,001, the
// threads with both listed twice). cause 0: the rest is noise.
struct ThreadGapParts {
  unsigned rows = 0;
  uint32_t cause[2] = {};
  uint64_t cpu_ns[2] = {};
  uint64_t noise_ns = 0;
};
ThreadGapParts split_thread_gap(uint64_t lost_ns, uint32_t cause, uint64_t gap_ns);

}  // namespace profiling::sampler

#endif  // PROFIL_SAMPLER_UNSAMPLED_H
