// Writes the raw dump (`*.profraw`, layout in src/format/profraw.h and
// docs/formats/profraw.md) of a process's pc table and stacks.
//
// ASYNC-SIGNAL-SAFE: write_profraw() runs from exit paths and from the
// handlers of fatal signals. It uses only open/read/write/pwrite/fsync/
// rename/close/readlink/clock_gettime and stack buffers; no allocation,
// no locks, no stdio.
#ifndef PROFIL_RUNTIME_PROFRAW_WRITER_H
#define PROFIL_RUNTIME_PROFRAW_WRITER_H

#include <cstdint>

#include "format/profraw.h"
#include "runtime/profraw_sources.h"
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
  // The stacks, written after the unsampled records; null when stacks are
  // off (the dump then says none were captured).
  const StackSource* stacks = nullptr;
  uint32_t max_depth = 0;  // the unwinder's depth limit, recorded in the header
  // Names of the interpreter frames in the stacks; null: none.
  const InterpreterFrameSource* interpreter_frames = nullptr;
};

// Writes <dir>/<name> atomically (temporary + rename). false with errno set
// when it could not be written; no file of that name is then created.
// in_place: the temporary "<name>.tmp.<pid>" exists, empty (the
// placeholder of a process's first dump, run_directory.cc), and is written and
// renamed instead of a new one; a failed write leaves it there empty again
// (profil run then reads a process that wrote nothing; its own line says
// why).
// Lines of /proc/self/maps (each ending in a newline) of executable
// mappings the program unmapped (dlclose): later dumps append them to the
// maps, so samples taken in a module unloaded before the dump keep their
// object (issue 20: ImageMagick's coder modules, 59 % of convert's
// samples, were [unknown]). Not async-signal-safe (one writer at a time);
// the dump reads them safely.
void retire_mapping_lines(const char* lines, size_t length);

bool write_profraw(const char* dir, const char* name, const ProfrawInfo& info,
                   const sampler::PcTable& table, bool in_place = false);

// Appends one record to the run's ledger <dir>/<name>
// (format::profraw::LedgerRecord), which profil run created: the file is
// never created here (without profil run there is no ledger, and a
// process writes its own files). false with errno set when the record was
// not appended whole.
bool append_ledger_record(const char* dir, const char* name, const format::profraw::LedgerRecord& record);

}  // namespace profiling::runtime

#endif  // PROFIL_RUNTIME_PROFRAW_WRITER_H
