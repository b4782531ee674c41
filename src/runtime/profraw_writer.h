// Writes the raw dump (`*.profraw`, layout in src/format/profraw.h and
// docs/run.md) of a process's pc table.
//
// ASYNC-SIGNAL-SAFE: write_profraw() runs from exit paths and from the
// handlers of fatal signals. It uses only open/read/write/pwrite/fsync/
// rename/close/readlink/clock_gettime and stack buffers; no allocation,
// no locks, no stdio.
#ifndef PROFIL_RUNTIME_PROFRAW_WRITER_H
#define PROFIL_RUNTIME_PROFRAW_WRITER_H

#include <cstdint>

#include "format/profraw.h"
#include "sampler/pc_table.h"

namespace profiling::runtime {

// What the writer cannot learn by itself at dump time.
struct ProfrawInfo {
  uint32_t clock = 0;  // 0 cpu, 1 perf
  uint32_t hz = 0;
  int64_t start_ns = 0;
  format::profraw::EndReason end_reason = format::profraw::EndReason::exit;
  uint32_t signal = 0;
  uint64_t signals = 0;
  const char* run_id = "";  // at most kRunIdSize bytes are kept
  uint32_t start_clock = 0;  // the clock at start (clock: the one at the end)
  // CPU time no sample caught, by cause, written after the maps.
  const format::profraw::Unsampled* unsampled = nullptr;
  uint32_t unsampled_count = 0;
};

// Writes <dir>/<name> atomically (temporary + rename). false with errno set
// when it could not be written; no file of that name is then created.
// in_place: the temporary "<name>.tmp.<pid>" exists, empty (the
// placeholder of a process's first dump, preload.cc), and is written and
// renamed instead of a new one; a failed write leaves it there empty again
// (profil run then reads a process that wrote nothing; its own line says
// why).
bool write_profraw(const char* dir, const char* name, const ProfrawInfo& info,
                   const sampler::PcTable& table, bool in_place = false);

}  // namespace profiling::runtime

#endif  // PROFIL_RUNTIME_PROFRAW_WRITER_H
