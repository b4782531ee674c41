// What another program prints: report-side tools run objdump (the address
// view's disassembly) and dpkg (the missing-symbols hint) this one way.
#ifndef PROFIL_REPORT_CHILD_OUTPUT_H
#define PROFIL_REPORT_CHILD_OUTPUT_H

#include <string>
#include <vector>

namespace profiling::report {

// Runs args[0] (found on PATH, posix_spawnp) with args, its standard error
// to /dev/null, and returns its standard output in *out. True when it ran
// and exited with status 0.
bool child_output(const std::vector<std::string>& args, std::string* out);

}  // namespace profiling::report

#endif  // PROFIL_REPORT_CHILD_OUTPUT_H
