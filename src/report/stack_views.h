// The views of profil report that read the stack model (stacks.h): the
// flat rows with their cumulative column, folded stacks, the call tree and
// callers/callees. Each reads one StackSet, built once per report.
#ifndef PROFIL_REPORT_STACK_VIEWS_H
#define PROFIL_REPORT_STACK_VIEWS_H

#include <memory>
#include <string>
#include <vector>

#include "report/report.h"
#include "report/stacks.h"

namespace profiling::report {

// The stacks a report of this view reads: source lines for the line view,
// inline frames except in the object view (an object has no inlining), and
// --focus/--ignore/--hide applied (to object paths in the object view).
std::shared_ptr<const StackSet> stacks_for_report(const format::Profile& profile, FrameSymbolizer& symbolizer,
                                                  const ReportOptions& options);

// The rows of the function, line and object views from the stacks: each
// leaf frame's samples (self) and each stack's samples counted once for
// every row it passes through (cumulative); rows that are only callers
// have self 0. Fills report->rows, rows_before_filter and samples_shown
// (after --top and --min-percent; a row stays when its self or cumulative
// share reaches --min-percent).
void rows_from_stacks(const StackSet& set, const ReportOptions& options, Report* report);

// Folded and tree text of a set (render.h's render_folded/render_tree).
std::string folded_text(const StackSet& set, const ReportOptions& options);
std::string tree_text(const StackSet& set, const ReportOptions& options, const Summary& summary);

// --callers/--callees: each function matching the pattern with its callers
// (callees) and the samples and share of each edge.
enum class Relation { callers, callees };
std::string render_relations_text(const std::vector<CallRelations>& relations, Relation which,
                                  const Summary& summary, bool colour);
std::string render_relations_csv(const std::vector<CallRelations>& relations, Relation which);
std::string render_relations_json(const std::vector<CallRelations>& relations, Relation which, const Summary& summary);

// The one-line "files: ..." under a header, empty without files.
std::string files_line(const Summary& summary);

}  // namespace profiling::report

#endif  // PROFIL_REPORT_STACK_VIEWS_H
