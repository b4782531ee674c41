// Reports as text people read (aligned columns, colour only on a terminal),
// as data programs read (CSV with a header row, JSON of the schema in
// docs/report.md, folded stacks for flame graph tools), and as one
// self-contained HTML page.
#ifndef PROFIL_REPORT_RENDER_H
#define PROFIL_REPORT_RENDER_H

#include <string>

#include "report/diff.h"
#include "report/report.h"

namespace profiling::report {

std::string render_text(const Report& report, bool colour);
std::string render_csv(const Report& report);
std::string render_json(const Report& report);
// Whole stacks, root first: "frame;frame;leaf count" lines, hottest first
// (Brendan Gregg's stackcollapse format, which flamegraph.pl, inferno and
// speedscope read). Frames are function names (object names in the object
// view; object`function with ReportOptions::folded_objects); a truncated
// stack's root is "[truncated]"; a sample without callers is its leaf
// alone. --focus keeps the stacks with a frame that matches; --top and
// --min-percent apply to lines.
// Reads report.stacks (model.h: built for every view but the address view,
// and for it when ModelNeeds::stacks).
std::string render_folded(const Report& report);
// The same stacks merged from the root as a call tree: each function with
// its total (itself and its callees: cumulative) and self samples, callees
// indented below it, hottest first. --focus as for folded; --min-percent
// leaves out nodes (and their callees) below P % of all samples.
std::string render_tree(const Report& report);

// The HTML page: summary, sortable table, bar chart of the hottest rows,
// samples over each object's address space, and the source lines of the
// hottest functions. Reads report.stacks (the flame graph) and, for the last
// two, the model's leaves with their lines and the objects' segments
// (model.h ModelNeeds::sources and per_address).
std::string render_html(const Report& report, const SymbolizedProfile& symbolized);

std::string render_diff_text(const Diff& diff, const std::string& base_name, const std::string& new_name,
                             bool colour);
std::string render_diff_csv(const Diff& diff);
std::string render_diff_json(const Diff& diff);
// `profil diff --format html`: both summaries, the differential flame graph
// (the new stacks coloured by each frame's change of share,
// flame_graph.h differential_flame_graph) and the sortable table of rows.
std::string render_diff_html(const Diff& diff, const std::string& base_name, const std::string& new_name);

// Display width of UTF-8 text in code points (no wide characters expected
// in symbol names): text columns and the HTML charts' labels.
size_t width_of(const std::string& text);
// The widest a name column gets in text (frame_names.h shorten_name): wide
// enough for most C++ names' function part.
inline constexpr size_t kNameColumn = 72;
// profil diff's text: its lines fit kDiffTextWidth columns (a terminal's
// 120), objects' names shortened to kDiffObjectColumn (issue 35).
inline constexpr size_t kDiffTextWidth = 120;
inline constexpr size_t kDiffObjectColumn = 16;
// count as a percentage of total (0 without a total).
inline double percent_of(uint64_t count, uint64_t total) {
  return total ? 100.0 * static_cast<double>(count) / static_cast<double>(total) : 0;
}

// The one-line summary every format opens with.
std::string describe_summary(const Summary& summary);
// The one-line "files: ..." under a header, empty without files.
std::string files_line(const Summary& summary);
// The summary as JSON's "summary" object (docs/report.md).
std::string render_summary_json(const Summary& summary);
// RFC 8259 string escaping (without the quotes).
std::string json_escape(const std::string& text);

}  // namespace profiling::report

#endif  // PROFIL_REPORT_RENDER_H
