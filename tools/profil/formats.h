// The output formats of report, merge and diff, in one table: its names are
// what --format accepts (validation), what --help lists with each format's
// help text, and what the man pages' synopses must list (tests/man_pages.sh
// compares them). A new format is one new entry in formats.cc.
#ifndef PROFIL_TOOLS_FORMATS_H
#define PROFIL_TOOLS_FORMATS_H

#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "format/profile.h"
#include "report/diff.h"
#include "report/model.h"
#include "report/report.h"
#include "report/symbolizer.h"

namespace profiling::cli {

struct OutputFormat {
  std::string_view name;
  std::string_view help;  // one line, for --help
  // A file for another tool, made from the summed profile (report, merge);
  // `destination` names it in warnings. Binary: never to a terminal.
  std::string (*exported)(const format::Profile& profile, report::Symbolizer& symbolizer,
                          const std::string& destination) = nullptr;
  // A report of the model (report): its rows, stacks and leaves; never the
  // symbolizer (the model is built once, before any view).
  std::string (*rendered)(const report::Report& report, const report::SymbolizedProfile& symbolized,
                          bool colour) = nullptr;
  // A comparison of two profiles (diff).
  std::string (*compared)(const report::Diff& diff, const std::string& base, const std::string& changed,
                          bool colour) = nullptr;
  // What the rendered format reads of the model beyond its view's rows
  // (model.h ModelNeeds): every address apart, the stacks in the address
  // view too, the leaves' lines and objects' segments.
  // timeline: each thread's samples in time order (issue 33).
  bool per_address = false, stacks = false, sources = false, timeline = false;
  report::ModelNeeds needs() const { return {per_address, stacks, sources, timeline}; }
};

// Which command the format serves: report takes the exported and rendered
// ones, merge the exported, diff the compared.
enum class FormatUse { report, merge, diff };

// The formats `use` can write, in the table's order.
std::vector<const OutputFormat*> output_formats(FormatUse use);
// The entry named `name` that `use` can write, or null.
const OutputFormat* find_format(FormatUse use, std::string_view name);

// -f,--format on app: checked against the table; its description is
// "NAMES" followed by `more` (e.g. the default), and the command's --help
// ends with one line per format and its help text.
void add_format_option(CLI::App& app, std::string* format, FormatUse use, const std::string& more = "");

}  // namespace profiling::cli

#endif  // PROFIL_TOOLS_FORMATS_H
