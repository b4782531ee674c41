// What the gmon runtime (gmon_runtime.cc) and the OpenBSD entry point
// (openbsd_profil.cc) share. Not async-signal-safe.
#ifndef PROFIL_RUNTIME_GMON_RUNTIME_H
#define PROFIL_RUNTIME_GMON_RUNTIME_H

#include <cstdint>
#include <vector>

#include "format/gmon.h"

namespace profiling::runtime {

// The arcs mcount has recorded (empty unless a -pg program's __monstartup
// ran), with the main program's load bias subtracted, and the number of
// calls the full table could not count.
std::vector<format::GmonArc> gmon_recorded_arcs(uint64_t* dropped_calls);
size_t gmon_arc_slots();

// profil_openbsd() takes the process's profile over: from then on the
// histogram is its buffer, moncontrol() switches its sampling, and
// _mcleanup() writes no gmon.out (the arcs go into gmon.<progname>.<pid>.out).
void gmon_output_taken_by_openbsd();

// Implemented in openbsd_profil.cc: moncontrol() on an OpenBSD profile.
void openbsd_profil_set_running(bool running);

}  // namespace profiling::runtime

#endif  // PROFIL_RUNTIME_GMON_RUNTIME_H
