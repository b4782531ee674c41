// profil top -o (issue 33): a live view takes what the outside sampler
// gathered every second (outside::Sampler::take hands each interval once),
// yet a process's profile is one file. The takes of one process image are
// summed here into the profile a single take at the end would have given:
// samples with their stacks, mappings, names, CPU time and losses.
//
// Not thread-safe: one caller (OutsideRun, under its own use).
#ifndef PROFIL_TOOLS_TOP_TAKES_H
#define PROFIL_TOOLS_TOP_TAKES_H

#include <vector>

#include "format/profraw.h"
#include "outside/process_table.h"

namespace profiling::cli {

// Folds a later take of the same process image into *whole: its samples
// (their stacks interned again in whole's table), the mappings whole lacks,
// thread and frame names (the later win), durations, counts and unsampled
// time summed by cause; the end (reason, signal) is the later one's.
void add_take(format::ProfrawData* whole, format::ProfrawData later);

// The images of *kept with those of more folded in, one per (pid,
// generation), in the order first taken.
void sum_takes(std::vector<outside::ImageProfile>* kept, std::vector<outside::ImageProfile> more);

}  // namespace profiling::cli

#endif  // PROFIL_TOOLS_TOP_TAKES_H
