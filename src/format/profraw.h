// The raw dump a profiled process writes at exit (`<progname>.<pid>.profraw`,
// docs/formats/profraw.md): written by the preload runtime from a signal handler, so
// it is a flat little-endian layout the writer can produce with write(2)
// alone — a fixed header, the program path, the (pc, count) pairs, the
// bytes of /proc/self/maps as they were at the end, the unsampled records
// and the sampled stacks (docs/formats/profraw.md). `profil run` reads it
// back (this file) and converts it into pprof and gmon.out.
//
// The layout (profraw_layout.h, included) is shared with the
// async-signal-safe writer (src/runtime/profraw_writer.cc); the reader
// declared here allocates and throws FormatError: host side only.
#ifndef PROFIL_FORMAT_PROFRAW_H
#define PROFIL_FORMAT_PROFRAW_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "format/format_error.h"
#include "format/profile.h"
#include "format/profraw_layout.h"

namespace profiling::format {

// "cpu", "perf", "wall", "perf-signal" for a header's clock code ("" otherwise).
std::string describe_clock(uint32_t clock);

// "signals blocked", "sampler descriptor closed", "unknown" ("" otherwise).
const char* unsampled_cause_name(uint32_t cause);

// A decoded profraw: the fields of the header plus the profile built from it.
struct ProfrawData {
  Profile profile;  // samples, program, pid, clock, period, times, dropped, mappings
  int64_t ppid = 0;
  uint32_t hz = 0;
  profraw::EndReason end_reason = profraw::EndReason::exit;
  uint32_t signal = 0;
  uint64_t cpu_ns = 0;
  uint64_t signals = 0;
  std::string run_id;
  std::string maps;  // the raw /proc/self/maps text
  std::string start_clock;  // differs from profile.clock when sampling switched clocks
  std::vector<profraw::Unsampled> unsampled;
  bool stacks_captured = false;  // version 3 with stacks on
  uint32_t max_depth = 0;
  // Version 6: the process read its interpreter's frames at each sample
  // (issue 31: a CPython process, which samples on perf-signal, not the
  // ring, where auto was asked).
  bool interpreter_frames = false;
};

// The unsampled records as rows of the profile: a sample at
// unsampled_address(cause), named "[unsampled: <cause>]" in
// profile->frames, counting cpu_ns in periods (rounded). No mapping holds
// those addresses, so they reach pprof as locations without a mapping.
//
// With a carry, the part of a period left over is carried, per cause, to
// the next profile instead of rounded: a run of a thousand processes each
// 0.4 periods short of sampled (their threads' time after their last
// sample, from outside) counts 400 periods over them, where rounding each
// would count none.
struct UnsampledCarry {
  uint64_t ns[8] = {};  // by cause
};
void add_unsampled_rows(const ProfrawData& data, Profile* profile, UnsampledCarry* carry = nullptr);

// The well-formed records of a ledger, in the order they were appended;
// a record that is not one (a torn write, foreign bytes) is skipped, a
// short tail ignored.
std::vector<profraw::LedgerRecord> read_ledger(std::string_view bytes);

// Throws FormatError on foreign, truncated or inconsistent bytes.
//
// Samples: the (pc, count) pairs, with the stacks spread over them: each
// pc's stacks keep their weights (callers become call sites: return
// address - 1); what the pc's count has beyond its stacks' weights (the
// stack table was full) stays with no callers, marked truncated when
// stacks were captured. A pc with more stack weight than count (the pc
// table was full) counts its stacks' weight.
ProfrawData read_profraw(std::string_view bytes);
// Reads only the header (to pick the files of one run); throws FormatError.
profraw::Header read_profraw_header(std::string_view bytes);
// read_profraw(bytes).profile (the format layer's reader convention).
Profile decode_profraw(std::string_view bytes);

// The executable mappings of a /proc/<pid>/maps text, in address order, with
// the entry for `program` (when given) moved first. Adjacent entries of one
// file are kept apart (each has its own file offset). Pseudo-entries
// ([vdso], [vsyscall]) are kept with their bracketed names; anonymous
// executable memory (JIT) gets the path "[anon]". Throws FormatError on a
// line that is not a maps line.
std::vector<Mapping> executable_mappings(std::string_view maps, std::string_view program = {});

}  // namespace profiling::format

#endif  // PROFIL_FORMAT_PROFRAW_H
