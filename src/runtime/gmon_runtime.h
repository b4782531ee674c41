// What the gmon runtime (gmon_runtime.cc) and the OpenBSD entry point
// (openbsd_profil.cc) share. Not async-signal-safe.
#ifndef PROFIL_RUNTIME_GMON_RUNTIME_H
#define PROFIL_RUNTIME_GMON_RUNTIME_H

#include <cstdint>


namespace profiling::runtime {

class ArcTable;

size_t gmon_arc_slots();
// The arc table itself, for a writer that must not allocate
// (ASYNC-SIGNAL-SAFE), with the bias to subtract; null when none is attached.
const ArcTable* gmon_arc_table(uint64_t* bias);

// profil_openbsd() takes the process's profile over: from then on the
// histogram is its buffer, moncontrol() switches its sampling, and
// _mcleanup() writes no gmon.out (the arcs go into gmon.<progname>.<pid>.out).
void gmon_output_taken_by_openbsd();

// Implemented in openbsd_profil.cc: moncontrol() on an OpenBSD profile.
void openbsd_profil_set_running(bool running);

}  // namespace profiling::runtime

#endif  // PROFIL_RUNTIME_GMON_RUNTIME_H
