// The HTML page's flame graph section (issue 22): the controls, the chart's
// element, the graph's JSON (flame_graph.h), the d3-flame-graph library
// compiled in (flame_graph_assets.h) and the script that draws it: click to
// zoom, search that highlights and sums its matches, hover for self and
// total samples with their 95 % Wilson intervals, flame or icicle; a
// click also shows the function's callers and callees
// (flame_graph_sandwich.h).
#ifndef PROFIL_REPORT_FLAME_GRAPH_PAGE_H
#define PROFIL_REPORT_FLAME_GRAPH_PAGE_H

#include <cstdint>
#include <string>

#include "report/flame_graph.h"

namespace profiling::report {

// The page's section: the heading, the controls, the chart's element, the
// data, the library and the script that draws it. Every id the tests and
// users' scripts rely on is fixed here: #flame-graph (the chart, an SVG of
// <g class="frame"> elements named by their frame), #flame-graph-search,
// #flame-graph-matches, #flame-graph-details, #flame-graph-reset,
// #flame-graph-toggle, #flame-graph-data (the JSON of FlameGraph::json).
// total_observations: the draws behind total (0 none).
std::string flame_graph_section(const FlameGraph& graph, uint64_t total, uint64_t total_observations = 0);

}  // namespace profiling::report

#endif  // PROFIL_REPORT_FLAME_GRAPH_PAGE_H
