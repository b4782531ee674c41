// The views of profil report that read the stack model (stacks.h): the
// flat rows with their cumulative column, folded stacks and the call tree
// (callers/callees: call_relations.h). Each reads one StackSet, built once
// per report (model.h).
#ifndef PROFIL_REPORT_STACK_VIEWS_H
#define PROFIL_REPORT_STACK_VIEWS_H

#include <memory>
#include <string>
#include <vector>

#include "report/report.h"
#include "report/stacks.h"

namespace profiling::report {

// The rows of the function, line and object views from the stacks: each
// leaf frame's samples (self) and each stack's samples counted once for
// every row it passes through (cumulative); rows that are only callers
// have self 0. Fills report->rows, rows_before_filter and samples_shown
// (after --top and --min-percent; a row stays when its self or cumulative
// share reaches --min-percent).
void rows_from_stacks(const StackSet& set, const ReportOptions& options, Report* report);

// Every stack's frames as folded names, with stacks that read the same
// merged: each named stack is a representative of the set (its frames read
// through name_of), so no stack is copied.
struct NamedStacks {
  std::vector<std::string> names;
  std::vector<uint32_t> name_of;                          // by FrameId
  std::vector<std::pair<const Stack*, uint64_t>> stacks;  // (representative, count)
};
// The folded view's lines before they are joined into text: names as
// folded_text prints them, --min-percent and --top applied, hottest first
// (ties in the order the stacks were first met).
NamedStacks folded_stacks(const StackSet& set, const ReportOptions& options);

// Folded and tree text of a set (render.h's render_folded/render_tree).
std::string folded_text(const StackSet& set, const ReportOptions& options);
std::string tree_text(const StackSet& set, const ReportOptions& options, const Summary& summary);

}  // namespace profiling::report

#endif  // PROFIL_REPORT_STACK_VIEWS_H
