// Writing profiles for other tools: pprof with function names and lines
// filled in by our symbolizer, and a GNU gmon.out for one executable (what
// binutils gprof reads). The one place either is made, for profil report
// and merge and for profil run's conversion alike (issue 21: the run had
// its own copies); files are written with format::write_file_atomically.
#ifndef PROFIL_REPORT_EXPORT_H
#define PROFIL_REPORT_EXPORT_H

#include <cstdint>
#include <optional>
#include <string>

#include "format/profile.h"
#include "report/symbolizer.h"

namespace profiling::report {

// gzip'd profile.proto with symbolized locations: each address's frames
// from the symbolizer (inlined functions as lines of the location,
// innermost first), else those the profile carries; without a symbolizer
// (nullptr), only those. Throws format::FormatError (a count too large for
// profile.proto).
std::string export_pprof(const format::Profile& profile, Symbolizer* symbolizer);

// A GNU gmon.out of `program`'s samples: one histogram over its executable
// PT_LOAD segments, in the link-time addresses gprof matches against the
// symbol table (the load bias subtracted), at rate_hz. Samples elsewhere
// cannot be expressed in a single-program gmon.out and are counted in
// *left_out. nullopt, with *problem, when the object cannot be read or has
// no executable segment. Throws format::FormatError (a text range too large).
std::optional<std::string> gmon_of_program(const format::Profile& profile, const format::Mapping& program,
                                           uint32_t rate_hz, Symbolizer& symbolizer, uint64_t* left_out,
                                           std::string* problem);

// gmon_of_program for the profile's program (else its first mapping), at
// the rate of its sampling period. Throws std::runtime_error when the
// executable cannot be read.
std::string export_gmon(const format::Profile& profile, Symbolizer& symbolizer, uint64_t* left_out = nullptr);

}  // namespace profiling::report

#endif  // PROFIL_REPORT_EXPORT_H
