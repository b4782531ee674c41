// The HTML page's flame charts (issue 33): one per thread, time on the x
// axis on one scale for every thread, drawn with the page's d3-flame-graph
// (flame_graph_assets.h) from a tree whose children stay in time order
// (sort(false)) and are merged only where consecutive samples share their
// frames (a flame chart, as speedscope's time order builds it), the gaps
// and a frame's own time drawn as blank children so that each frame sits
// at its time. d3-flame-graph has no flame-chart mode of its own; a tree
// so built is one, and keeps the flame graph's zoom and tooltips.
//
// Fixed ids and attributes, for the tests and users' scripts:
// #flame-charts (the section), #flame-chart-data (Timeline as JSON),
// #flame-charts-none (the line said when the profile has no times), and
// per thread a div.flame-chart with data-tid and data-pid whose SVG holds
// d3-flame-graph's <g class="frame" name="..."> at their x.
#ifndef PROFIL_REPORT_FLAME_CHART_PAGE_H
#define PROFIL_REPORT_FLAME_CHART_PAGE_H

#include <string>

#include "report/timeline.h"

namespace profiling::report {

// The section; the library must be on the page already (flame_graph_section
// puts it there).
std::string flame_chart_section(const Timeline& timeline);

}  // namespace profiling::report

#endif  // PROFIL_REPORT_FLAME_CHART_PAGE_H
