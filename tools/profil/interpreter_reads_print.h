// The run's lines on interpreted programs' own frames (issues 31, 34):
// for Python and Ruby alike, summed over each event's sampler, how many
// samples got frames, which way they were read (at the sample by BPF, or
// after the fact, and why), and how many did not fit their native stack.
// Split from outside_run.cc, which says the rest of a run from outside.
#ifndef PROFIL_TOOLS_INTERPRETER_READS_PRINT_H
#define PROFIL_TOOLS_INTERPRETER_READS_PRINT_H

#include <vector>

#include "outside/sampler.h"

namespace profiling::cli {

// samplers: one per event, the first the one whose refusals are said;
// at_sample_asked: false under --no-bpf (said so). Not for signal handlers.
void print_interpreter_reads(const std::vector<const outside::Sampler*>& samplers, bool at_sample_asked);

}  // namespace profiling::cli

#endif  // PROFIL_TOOLS_INTERPRETER_READS_PRINT_H
