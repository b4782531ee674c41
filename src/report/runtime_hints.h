// A hint for a program whose samples are mostly in code of a language
// runtime that profil cannot name (issue 31): JIT code in anonymous memory
// ([anon]: node without --perf-basic-prof, a JVM; the hint names profil run
// --jit, issue 34), or Ruby's interpreter in a profile without Ruby methods
// (profil reads Ruby 3.1's from outside: docs/ruby.md). One line saying
// what would name them; CPython's frames profil reads itself
// (docs/python.md).
//
// NOT async-signal-safe: host side.
#ifndef PROFIL_REPORT_RUNTIME_HINTS_H
#define PROFIL_REPORT_RUNTIME_HINTS_H

#include <string>
#include <vector>

#include "report/model.h"

namespace profiling::report {

// A line for each runtime with at least a fifth of the samples:
//   "42% of the samples are JIT code no map names ([anon]); profil run
//    --jit starts node with --perf-basic-prof, whose map profil reads ..."
std::vector<std::string> runtime_hints(const SymbolizedProfile& symbolized);

}  // namespace profiling::report

#endif  // PROFIL_REPORT_RUNTIME_HINTS_H
