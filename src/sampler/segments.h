// sprofil()'s overlapping regions resolved to the disjoint address segments
// the handler searches (sinks.h). Setup code: allocates, NOT
// async-signal-safe; control.cc calls it before publishing a histogram.
#ifndef PROFIL_SAMPLER_SEGMENTS_H
#define PROFIL_SAMPLER_SEGMENTS_H

#include <vector>

#include "sampler/bins.h"
#include "sampler/sinks.h"

namespace profiling::sampler {

// Where regions overlap the one with the higher offset wins (glibc
// sprofil's rule), then the earlier one in the array. Segments come out
// sorted by start, disjoint and non-empty. O(n log n) in the regions: a
// program may pass one region per function (10^6 of them).
std::vector<Segment> resolve_segments(const std::vector<Region>& regions);

}  // namespace profiling::sampler

#endif  // PROFIL_SAMPLER_SEGMENTS_H
