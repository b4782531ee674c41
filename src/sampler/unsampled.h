// The accounting of CPU time no sample caught (sampler.h: Unsampled,
// unsampled_time): each slot's ticks against its thread's CPU clock, the
// gap's cause asked of the running engine. The threads that ended keep
// their gaps here; the live ones are measured when asked.
//
// ASYNC-SIGNAL-SAFE: unsampled_time (sampler.h) and what it calls (the
// engine's account_process and gap_cause). account_released and
// reset_accounting run under the sampler's control lock.
#ifndef PROFIL_SAMPLER_UNSAMPLED_H
#define PROFIL_SAMPLER_UNSAMPLED_H

#include "sampler/thread_slots.h"

namespace profiling::sampler {

// A clock released while its thread runs unsampled (blocked signals, a
// closed counter) keeps what it missed.
void account_released(const ThreadClock& c);
// Forgets the threads that ended (a fork child: the parent's are not its).
void reset_accounting();

}  // namespace profiling::sampler

#endif  // PROFIL_SAMPLER_UNSAMPLED_H
