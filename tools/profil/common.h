// What the commands share, so that each says and does the same thing the
// same way: loading and summing inputs, warnings, colour, the output file.
#ifndef PROFIL_TOOLS_COMMON_H
#define PROFIL_TOOLS_COMMON_H

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "format/profile.h"
#include "report/input.h"
#include "report/merge.h"
#include "report/symbolizer.h"

namespace profiling::cli {

// Reads every file (gmon inputs name their program with `exe`) and sums
// them into *merged, one file at a time: *inputs gets each file's path and
// type, not its profile. Several processes are summed over (their pids
// dropped) unless `processes` keeps them apart (report/merge.h). Returns
// 0, or the status of the one line printed about the input that could not
// be read or summed.
int load_inputs(const std::vector<std::string>& files, const std::string& exe,
                std::vector<report::LoadedProfile>* inputs, format::Profile* merged, bool* saturated = nullptr,
                report::Processes processes = report::Processes::summed);

// "profil: warning: ..." for each warning the symbolizer collected.
void print_warnings(report::Symbolizer& symbolizer);
void print_warnings(const std::vector<std::string>& warnings);

// --color auto|always|never (default auto) on app.
void add_color_option(CLI::App& app, std::string* mode);
// auto: only on a terminal, and not when NO_COLOR is set (no-color.org).
bool use_colour(const std::string& mode, bool to_file);

// --symbolize MODE on app (pprof's -symbolize): "auto" takes the names a
// profile file carries for a mapping it symbolized completely (what
// `profil run` wrote) and reads the objects for the rest; "force" reads
// every object again (a rebuilt library with the same build id, newer
// debug files).
void add_symbolize_option(CLI::App& app, std::string* mode);

// -o,--output FILE on app: "-" or none is standard output.
void add_output_option(CLI::App& app, std::string* output, const std::string& what);
bool writes_to_file(const std::string& output);
// Writes bytes to the output (atomically to a file); refuses binary bytes
// on a terminal. Returns the exit status.
int emit(const std::string& output, const std::string& bytes, bool binary);

}  // namespace profiling::cli

#endif  // PROFIL_TOOLS_COMMON_H
