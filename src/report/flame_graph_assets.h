// d3-flame-graph and the d3 v7 modules it requires, as one script: npm ci
// installs the versions web/package-lock.json pins when profil is built,
// web/bundle.mjs joins their browser builds and writes them into a
// generated source (flame_graph_assets.cc in the build tree), so that
// profil carries them and every page it writes works offline; nothing is
// read at run time and nothing of the library is kept in the repository.
#ifndef PROFIL_REPORT_FLAME_GRAPH_ASSETS_H
#define PROFIL_REPORT_FLAME_GRAPH_ASSETS_H

#include <cstddef>

namespace profiling::report {

// The script, NUL-terminated; it defines the globals d3 and flamegraph.
extern const char kFlameGraphLibrary[];
extern const size_t kFlameGraphLibrarySize;
// "internmap 2.0.3, d3-array 3.2.5, ..., d3-flame-graph 5.0.0"
extern const char kFlameGraphLibraryVersions[];

}  // namespace profiling::report

#endif  // PROFIL_REPORT_FLAME_GRAPH_ASSETS_H
