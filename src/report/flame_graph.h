// The HTML report's flame graph (issue 22): the stack model's stacks merged
// from the root into the tree d3-flame-graph draws, as JSON; the page's
// section that draws it is flame_graph_page.h.
#ifndef PROFIL_REPORT_FLAME_GRAPH_H
#define PROFIL_REPORT_FLAME_GRAPH_H

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "report/report.h"

namespace profiling::report {

class StackSet;  // stacks.h

// One frame of a stack as the flame graph names it.
struct FlameFrame {
  std::string_view name;    // function (with " (inline)" for an inlined one), or [truncated]
  std::string_view object;  // the object's file name; empty for [truncated]
  bool inlined = false;     // coloured apart
};

// Stacks merged from the root: a node per distinct path of frames, its
// value the samples of the stacks through it (total; self is the total less
// its children's). Memory follows the distinct paths, not the samples.
class FlameGraph {
 public:
  FlameGraph();
  // A stack, root first, and its samples, in `observations` draws (signals
  // or ring records; 0 when the profile has none). An empty stack counts
  // at the root.
  void add(const std::vector<FlameFrame>& root_first, uint64_t count, uint64_t observations = 0);
  // A stack of the base profile of a differential graph (profil diff):
  // counted apart; the graph's shape stays the new profile's (add).
  void add_base(const std::vector<FlameFrame>& root_first, uint64_t count, uint64_t observations = 0);
  // Samples added: the root's value.
  uint64_t samples() const { return nodes_[0].total; }
  uint64_t base_samples() const { return nodes_[0].base; }
  // The draws behind samples() and base_samples() (issue 22); 0 when a
  // side's stacks carried none.
  uint64_t observations() const { return nodes_[0].observations; }
  uint64_t base_observations() const { return nodes_[0].base_observations; }
  bool differential() const { return differential_; }
  // What one sample of each side is exposed to, for the self samples'
  // rate test (diff.h diff_exposures: samples per CPU second, times the
  // wall seconds with per_wall_second); 1 and 1 until set: equal rates.
  void set_exposures(double base, double changed, bool per_wall_second);
  bool rate_per_wall_second() const { return per_wall_second_; }
  // The JSON the page reads, names and objects interned once:
  //   {"total":T,"names":[...],"objects":[...],
  //    "tree":{"n":name,"o":object,"v":samples,"i":1 (inlined),"c":[children]}}
  // total is the denominator of every percentage (all samples of the files,
  // whatever was filtered); the root is named "all". Children come in name
  // order (then object), as flame graphs place them. No "<" is left in the
  // text (written \u003c), so it can be inlined in a <script> element.
  // A differential graph adds "base_total", "rate_per" ("run", or
  // "wall_second" after set_exposures(..., true)) and per node "b" (its
  // base samples), "q" (diff_test's p value of its change of share of the
  // total, adjusted across the nodes by benjamini_hochberg: the tooltip's),
  // "r" (poisson_rate_test's of its self samples, each side's exposure
  // set_exposures', adjusted the same way) and, where r < kDiffLevel, "d":
  // the change of its self samples, new less base times new_exposure /
  // base_exposure, which the page paints red (grew) or blue (shrank), as
  // d3-flame-graph's differentialColorMapper does, or orange on a path the
  // base did not have ("b":0). Colours follow the change in samples (or in seconds per
  // second), not of share: when one function grows, every other frame's
  // share falls though its time did not move, and each frame is coloured
  // by its self time, as Gregg's flamegraph.pl colours the leaf of each
  // stack, so the callers of what grew stay grey (issue 35). A node within
  // the noise gets no "d" and stays grey. Nodes only in the base have
  // "v":0: the page draws the new profile's shape, or the base's ("b") at
  // its shape button.
  // With total_observations (the draws behind total; issue 22) and
  // observations in the graph: "total_observations" and per node "w" (its
  // draws), from which the page's intervals come as report.h's
  // share_interval's do; a differential graph's tests are then of the
  // draws (per node "bw": the base's), when both sides have them.
  std::string json(uint64_t total, uint64_t total_observations = 0) const;

 private:
  struct Node {
    uint32_t name = 0, object = 0;
    bool inlined = false;
    uint64_t total = 0;
    uint64_t base = 0;  // a differential graph's base samples
    uint64_t observations = 0, base_observations = 0;  // the draws behind total and base
    std::map<std::tuple<uint32_t, uint32_t, bool>, uint32_t> children;  // (name, object, inlined) -> node
  };
  // Looked up by string_view: a frame already interned costs no allocation.
  struct TextHash {
    using is_transparent = void;
    size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
  };
  using Ids = std::unordered_map<std::string, uint32_t, TextHash, std::equal_to<>>;
  static uint32_t intern(std::vector<std::string>& table, Ids& ids, std::string_view text);
  void add_to(const std::vector<FlameFrame>& root_first, uint64_t count, uint64_t Node::*field,
              uint64_t observations, uint64_t Node::*observations_field);
  bool differential_ = false;
  double base_exposure_ = 1, new_exposure_ = 1;
  bool per_wall_second_ = false;
  std::vector<Node> nodes_;
  std::vector<std::string> names_, objects_;
  Ids name_ids_, object_ids_;
};

// The flame graph of a stack set (the one stack model): frames labelled as
// frame_label does, objects by file name.
FlameGraph flame_graph_of(const StackSet& set);
// The differential flame graph of `profil diff --format html`: the new
// stacks' shape, each frame with its base samples too, its self samples
// tested at the diff's exposures (diff_exposures).
struct Diff;
FlameGraph differential_flame_graph(const StackSet& base, const StackSet& changed, const Diff& diff);

// The flame graph of the report's stacks (report.stacks, model.h). The
// address view's report holds the function view's stacks; its graph is
// their folded view's (frames as object`function, none marked inlined, no
// draws). --focus applies as to folded stacks; --top and --min-percent do
// not (they cut rows, and the graph shows every stack).
FlameGraph build_flame_graph(const Report& report);

}  // namespace profiling::report

#endif  // PROFIL_REPORT_FLAME_GRAPH_H
