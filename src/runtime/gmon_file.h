// GNU gmon.out written from live memory, for the gmon runtime's every way
// out: exit (through _mcleanup), _exit, _Exit and fatal signals (through
// process_end.h). The layout is the one src/format/gmon.h documents and
// reads back (tests compare them through binutils gprof).
//
// ASYNC-SIGNAL-SAFE: open/write/rename through base::AtomicFile, a stack
// buffer, no allocation.
#ifndef PROFIL_RUNTIME_GMON_FILE_H
#define PROFIL_RUNTIME_GMON_FILE_H

#include <cstddef>
#include <cstdint>

#include "runtime/gmon_arcs.h"

namespace profiling::runtime {

struct GmonImage {
  uint64_t low_pc = 0;  // the histogram's range, in link-time addresses
  uint64_t high_pc = 0;
  const uint16_t* bins = nullptr;  // read as they are (sampling may go on)
  size_t nbins = 0;
  uint32_t rate_hz = 0;
  const ArcTable* arcs = nullptr;
  uint64_t bias = 0;  // subtracted from every arc's PCs
};

// Writes the image to dirfd/name under a temporary name, then renames it.
// false with errno set when it could not.
bool write_gnu_gmon(int dirfd, const char* name, const GmonImage& image);

}  // namespace profiling::runtime

#endif  // PROFIL_RUNTIME_GMON_FILE_H
