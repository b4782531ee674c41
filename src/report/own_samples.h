// Profil's own samples (issue 22): those taken while libprofil.so, the
// runtime `profil run --inside` preloads, did its own work (its signal
// handler, the inside perf ring's drain, the dump at exit), set apart from
// the program's samples and only counted.
#ifndef PROFIL_REPORT_OWN_SAMPLES_H
#define PROFIL_REPORT_OWN_SAMPLES_H

#include <cstdint>

#include "format/profile.h"

namespace profiling::report {

// Moves profil's own samples out of profile->samples into
// profile->own_samples, takes libprofil's frames out of the stacks of the
// others (its thread trampoline, the interposers the program called), and
// drops the chains no sample names any more. Returns the weighted count
// moved.
//
// A sample is profil's when, from its leaf outward, the first frame outside
// the C library, the dynamic loader and the vDSO (what libprofil calls
// into) is in libprofil.so and not in one of the functions it exports:
// those are interposers (dlopen, pthread_create, fork, sigaction ...) the
// program called, whose work in the C library is the program's. A frame of
// libprofil further out is no reason: every thread starts in libprofil's
// trampoline and every program signal handler is called by libprofil's.
// Exported functions are read from libprofil's .dynsym; when the file
// cannot be read, every frame in it counts as profil's.
uint64_t set_apart_own_samples(format::Profile* profile);

}  // namespace profiling::report

#endif  // PROFIL_REPORT_OWN_SAMPLES_H
