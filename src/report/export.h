// Writing profiles for other tools: pprof with function names and lines
// filled in by our symbolizer, and a GNU gmon.out for one executable (what
// binutils gprof reads), plus the temp-and-rename write every output uses.
#ifndef PROFIL_REPORT_EXPORT_H
#define PROFIL_REPORT_EXPORT_H

#include <string>
#include <string_view>

#include "format/profile.h"
#include "report/symbolizer.h"

namespace profiling::report {

// gzip'd profile.proto with symbolized locations. Throws format::FormatError
// (a count too large for profile.proto).
std::string export_pprof(const format::Profile& profile, Symbolizer& symbolizer);
// A GNU gmon.out histogram of the samples that fall in the main executable
// (the profile's program, else its first mapping); samples elsewhere cannot
// be expressed in a single-program gmon.out and are counted in *left_out.
// Throws std::runtime_error when the executable cannot be read.
std::string export_gmon(const format::Profile& profile, Symbolizer& symbolizer, uint64_t* left_out = nullptr);

// Writes bytes to "<path>.tmp.<pid>" then renames it to path, so that a
// failure never leaves half a file where a good one was. Throws
// std::runtime_error("<strerror>").
void write_file_atomically(const std::string& path, std::string_view bytes);

}  // namespace profiling::report

#endif  // PROFIL_REPORT_EXPORT_H
