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
#include <vector>

#include "format/gmon.h"
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
// *left_out. Its arcs: gmon_arcs_from_stacks. nullopt, with *problem, when the object cannot be read or has
// no executable segment. Throws format::FormatError (a text range too large).
std::optional<std::string> gmon_of_program(const format::Profile& profile, const format::Mapping& program,
                                           uint32_t rate_hz, Symbolizer& symbolizer, uint64_t* left_out,
                                           std::string* problem);

// gprof's call-graph arcs from the samples' stacks, for a program never
// built with -pg: an arc from the caller's call site (from_pc, link-time)
// to the callee's entry (self_pc, its ELF symbol's start) counts the
// samples whose stack passes through that edge (once per sample, however
// often it recurses) among those the histogram holds (leaf in the
// program's text [text_low, text_high), link-time; bias = runtime -
// link-time). Samples, not calls: gprof prints them in its `called`
// column. Both ends must be in the program, so an edge through a library
// (do_sort -> qsort -> cmp) is no arc. Without recursion and without a
// library frame in between, the time gprof propagates along an arc is its
// count of samples (docs/report.md, "gprof's call graph from samples").
std::vector<format::GmonArc> gmon_arcs_from_stacks(const format::Profile& profile, const format::Mapping& program,
                                                  uint64_t bias, uint64_t text_low, uint64_t text_high,
                                                  Symbolizer& symbolizer);

// gmon_of_program for the profile's program (else its first mapping), at
// the rate of its sampling period. Throws std::runtime_error when the
// executable cannot be read.
std::string export_gmon(const format::Profile& profile, Symbolizer& symbolizer, uint64_t* left_out = nullptr);

}  // namespace profiling::report

#endif  // PROFIL_REPORT_EXPORT_H
