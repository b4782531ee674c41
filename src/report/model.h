// The report's one model (issue 30): a profile symbolized in one pass —
// each distinct address asked of the Symbolizer once — into what every view
// reads: the leaves by address (SymbolizedProfile: the summary, the address
// view, the HTML page's address charts and source lines) and the stacks
// (StackSet, stacks.h: every other view). The command builds it once and
// hands it down; no view takes a Symbolizer.
//
//   profile -> ElfFrameSymbolizer (one Symbol per address) -> leaves
//                                                           -> stacks
//   -> build_report (report.h) -> render_* (render.h, html.cc)
//
// Not thread-safe: one model is built by one thread, as its Symbolizer is.
#ifndef PROFIL_REPORT_MODEL_H
#define PROFIL_REPORT_MODEL_H

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "format/profile.h"
#include "report/stacks.h"
#include "report/symbolizer.h"
#include "report/timeline.h"

namespace profiling::report {

struct ReportOptions;  // report.h

// One distinct sampled address, symbolized.
struct SymbolizedSample {
  uint64_t address = 0;  // runtime
  uint64_t count = 0;
  uint64_t observations = 0;  // the draws behind count (0 without observations)
  const format::Mapping* mapping = nullptr;
  Symbol symbol;
  SourceLine line;  // filled only when lines were asked for
};

// The profile with every distinct address symbolized once.
struct SymbolizedProfile {
  const format::Profile* profile = nullptr;
  uint64_t total = 0;  // saturates at 2^64-1
  // The draws behind total; 0 when the profile has no observations
  // (format::Profile::has_observations).
  uint64_t total_observations = 0;
  bool saturated = false;  // some count or the total passed 2^64-1 and stayed there
  std::vector<SymbolizedSample> samples;  // by address
  // The PT_LOAD segments of each sampled object that could be read (a
  // sample with a link-time address), by mapping; filled only when asked
  // for (LeafOptions::segments: the HTML page's address charts).
  std::unordered_map<const format::Mapping*, std::vector<LoadSegment>> segments;
};

// The ELF/DWARF symbolizer (symbolizer.h) behind FrameSymbolizer, for one
// profile. The leaf pass and the stacks walk the samples side by side: the
// Symbol of the leaf the leaf pass named last is kept, and the stacks name
// that leaf from it instead of symbolizing it again. Holds a reference:
// symbolizer must outlive it.
class ElfFrameSymbolizer final : public FrameSymbolizer {
 public:
  explicit ElfFrameSymbolizer(Symbolizer& symbolizer) : symbolizer_(symbolizer) {}
  std::vector<StackFrame> frames_at(const format::Mapping* mapping, uint64_t address,
                                    const std::vector<format::Frame>* carried, bool lines, bool inlines) override;
  // The Symbol of a leaf address, kept for frames_at until the next leaf.
  const Symbol& leaf_symbol(const format::Mapping* mapping, uint64_t address,
                            const std::vector<format::Frame>* carried);
  Symbolizer& symbolizer() { return symbolizer_; }

 private:
  Symbolizer& symbolizer_;
  bool have_leaf_ = false;
  uint64_t leaf_address_ = 0;
  Symbol leaf_;
};

// The HTML page shows the source lines of this many of the hottest
// functions (hottest_functions).
inline constexpr size_t kSourceFunctions = 10;

struct LeafOptions {
  bool lines = false;  // each entry's source line (a DWARF line lookup per address)
  // Without lines: the source line of the entries of the N hottest
  // functions alone (the HTML page's source sections); 0 none.
  size_t source_functions = 0;
  // false: consecutive addresses with the same symbol (and line, with
  // lines) are one entry at the first one's address, enough for every view
  // but the address view and the HTML page's address chart.
  bool per_address = true;
  bool segments = false;  // SymbolizedProfile::segments
};
// The leaf pass, one sample at a time: every distinct sampled address,
// symbolized, from samples sorted by address (as every reader leaves them).
class LeafPass {
 public:
  LeafPass(const format::Profile& profile, ElfFrameSymbolizer& frames, const LeafOptions& options);
  void add(const format::Sample& sample);
  SymbolizedProfile take();

 private:
  ElfFrameSymbolizer& frames_;
  LeafOptions options_;
  SymbolizedProfile out_;
  std::vector<const format::Mapping*> mappings_;  // by start
  bool have_previous_ = false;
  uint64_t previous_address_ = 0;
};
// The n functions with the most samples among the entries a symbol names
// (known or from the profile), most first, ties in name order; each as
// its function, '\0', its object.
std::vector<std::string> hottest_functions(const SymbolizedProfile& symbolized, size_t n);
// The leaf pass over every sample (a copy sorted by address first when the
// samples are not).
SymbolizedProfile symbolize_leaves(const format::Profile& profile, ElfFrameSymbolizer& frames,
                                   const LeafOptions& options);
// The leaf pass on its own (a flat profile: tests, tools that want no stacks).
SymbolizedProfile symbolize_profile(const format::Profile& profile, Symbolizer& symbolizer, bool with_lines,
                                    bool per_address = true);
// The one line on stderr saying that counts were shown saturated.
void warn_saturated();

// The stacks a report of this view reads: source lines for the line view,
// inline frames except in the object view (an object has no inlining), and
// --focus/--ignore/--hide applied (to object paths in the object view).
std::shared_ptr<const StackSet> stacks_for_report(const format::Profile& profile, FrameSymbolizer& symbolizer,
                                                  const ReportOptions& options);

// What a report's format reads beyond its view's rows (formats.h says it
// for each format).
struct ModelNeeds {
  bool per_address = false;  // every address an entry of its own (the HTML page's address charts)
  bool stacks = false;       // the stacks even in the address view (folded, tree, the flame graph)
  bool sources = false;      // the hottest functions' lines and the objects' segments (the HTML page)
  bool timeline = false;     // each thread's samples in time order (speedscope, the HTML page's flame charts)
};

struct Model {
  SymbolizedProfile symbolized;
  // After --focus/--ignore/--hide; null in the address view unless
  // ModelNeeds::stacks (its rows are its leaves).
  std::shared_ptr<const StackSet> stacks;
  // Each thread's samples in time order (timeline.h); only with
  // ModelNeeds::timeline.
  std::shared_ptr<const Timeline> timeline;
};
// The model of one profile for a report of options.view. profile must
// outlive it (symbolized.profile points to it).
Model build_model(const format::Profile& profile, Symbolizer& symbolizer, const ReportOptions& options,
                  const ModelNeeds& needs = {});
// Several profiles named by one symbolizer (profil diff: a function has one
// name on both sides), one after the other.
std::vector<Model> build_models(const std::vector<const format::Profile*>& profiles, Symbolizer& symbolizer,
                                const ReportOptions& options, const ModelNeeds& needs = {});

}  // namespace profiling::report

#endif  // PROFIL_REPORT_MODEL_H
