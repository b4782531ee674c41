// --callers/--callees (issue 22): each function matching a pattern with
// its callers or callees, read from the stack model (stacks.h), and the
// report's text, CSV and JSON of them.
#ifndef PROFIL_REPORT_CALL_RELATIONS_H
#define PROFIL_REPORT_CALL_RELATIONS_H

#include <cstdint>
#include <string>
#include <vector>

#include "report/report.h"
#include "report/stacks.h"

namespace profiling::report {

// --callers/--callees: each function whose name matches, with the samples
// through it (cumulative) and its self samples, and each caller (or callee)
// with the samples on that edge; an edge counts once per stack.
struct CallEdge {
  std::string function, object;  // the caller or callee
  bool inlined = false;          // the edge is an inlining, not a call
  uint64_t samples = 0;
  double share = 0;              // percent of the function's cumulative samples
};
struct CallRelations {
  std::string function, object;
  uint64_t cumulative = 0, self = 0;
  std::vector<CallEdge> callers, callees;  // most samples first
};
// Functions are matched by name (frames of one function and object are one,
// inlined or not); most cumulative samples first.
std::vector<CallRelations> call_relations(const StackSet& set, const FocusPattern& pattern);

// Each function matching the pattern with its callers (callees) and the
// samples and share of each edge.
enum class Relation { callers, callees };
std::string render_relations_text(const std::vector<CallRelations>& relations, Relation which,
                                  const Summary& summary, bool colour);
std::string render_relations_csv(const std::vector<CallRelations>& relations, Relation which);
std::string render_relations_json(const std::vector<CallRelations>& relations, Relation which, const Summary& summary);

}  // namespace profiling::report

#endif  // PROFIL_REPORT_CALL_RELATIONS_H
