// The HTML page's sandwich view (issue 35): a clicked function's callers
// above it and its callees below, each merged over every place the
// function is in the flame graph, as --callers/--callees print them
// (call_relations.h) and as speedscope's and pprof's sandwich views draw
// them. Computed in the page from the flame graph's JSON (flame_graph.h):
// nothing is added to the data.
#ifndef PROFIL_REPORT_FLAME_GRAPH_SANDWICH_H
#define PROFIL_REPORT_FLAME_GRAPH_SANDWICH_H

#include <string>

namespace profiling::report {

// The view's section, after the flame graph's (flame_graph_page.h): its
// elements, hidden until a frame is clicked, and its scripts. Fixed ids:
// #flame-graph-sandwich (the view, data-function: the function shown),
// #flame-graph-sandwich-title, #flame-graph-callers (a flame: the
// function at the bottom, its callers above), #flame-graph-callees (an
// icicle: the function at the top, its callees below),
// #flame-graph-sandwich-close, and #flame-graph-sandwich-script, which
// defines profilSandwich(tree, name, object) -> {callers, callees}, two
// trees of the graph's JSON node form ({"n","o","v","i","c"}) rooted at
// the function, without the DOM (a test runs it in node). The flame
// graph's script calls profilSandwichShow(node) on a click.
std::string flame_graph_sandwich_section();

}  // namespace profiling::report

#endif  // PROFIL_REPORT_FLAME_GRAPH_SANDWICH_H
