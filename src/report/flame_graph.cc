#include "report/flame_graph.h"

#include <algorithm>

#include <fmt/format.h>

#include "format/profile.h"
#include "report/diff.h"
#include "report/render.h"
#include "report/stack_views.h"
#include "report/stacks.h"

namespace profiling::report {

FlameGraph::FlameGraph() {
  intern(names_, name_ids_, "all");
  intern(objects_, object_ids_, "");
  nodes_.emplace_back();
}

uint32_t FlameGraph::intern(std::vector<std::string>& table, Ids& ids, std::string_view text) {
  auto known = ids.find(text);
  if (known != ids.end()) return known->second;
  const auto id = static_cast<uint32_t>(table.size());
  ids.emplace(std::string(text), id);
  table.emplace_back(text);
  return id;
}

void FlameGraph::add(const std::vector<FlameFrame>& root_first, uint64_t count, uint64_t observations) {
  add_to(root_first, count, &Node::total, observations, &Node::observations);
}

void FlameGraph::add_base(const std::vector<FlameFrame>& root_first, uint64_t count, uint64_t observations) {
  differential_ = true;
  add_to(root_first, count, &Node::base, observations, &Node::base_observations);
}

void FlameGraph::set_exposures(double base, double changed, bool per_wall_second) {
  base_exposure_ = base;
  new_exposure_ = changed;
  per_wall_second_ = per_wall_second;
}

void FlameGraph::add_to(const std::vector<FlameFrame>& root_first, uint64_t count, uint64_t Node::*field,
                        uint64_t observations, uint64_t Node::*observations_field) {
  if (count == 0) return;
  uint32_t at = 0;
  format::saturating_add(nodes_[0].*field, count);
  format::saturating_add(nodes_[0].*observations_field, observations);
  for (const FlameFrame& frame : root_first) {
    const auto key = std::make_tuple(intern(names_, name_ids_, frame.name), intern(objects_, object_ids_, frame.object),
                                     frame.inlined);
    auto [it, inserted] = nodes_[at].children.try_emplace(key, static_cast<uint32_t>(nodes_.size()));
    if (inserted) {
      Node node;
      std::tie(node.name, node.object, node.inlined) = key;
      nodes_.push_back(std::move(node));  // may move nodes_: `it` stays valid (it is the map's)
    }
    at = it->second;
    format::saturating_add(nodes_[at].*field, count);
    format::saturating_add(nodes_[at].*observations_field, observations);
  }
}

namespace {

// JSON text that can stand inside a <script> element: no "<" at all, so
// neither "</script" nor "<!--" can end or confuse it.
void append_json_string(std::string& out, const std::string& text) {
  out += '"';
  for (char c : json_escape(text)) {
    if (c == '<')
      out += "\\u003c";
    else
      out += c;
  }
  out += '"';
}

void append_table(std::string& out, const char* key, const std::vector<std::string>& table) {
  out += fmt::format("\"{}\":[", key);
  for (size_t i = 0; i < table.size(); ++i) {
    if (i) out += ',';
    append_json_string(out, table[i]);
  }
  out += "],";
}

}  // namespace

std::string FlameGraph::json(uint64_t total, uint64_t total_observations) const {
  std::string out = fmt::format("{{\"total\":{},", total);
  // Draws only where the stacks carried them (not the folded text of the
  // address view's graph).
  const bool observed = total_observations != 0 && nodes_[0].observations != 0;
  if (observed) out += fmt::format("\"total_observations\":{},", total_observations);
  // A differential graph tests the draws when both sides have them.
  const bool observed_both = observed && nodes_[0].base_observations != 0;
  // A differential graph's verdicts, each held to a false discovery rate
  // across the nodes as profil diff's rows are: q, each drawn node's
  // change of share (the new total against the base's), for the tooltip;
  // r, the change of its self samples at each side's exposure (the
  // colour; flame_graph.h says why).
  std::vector<double> q_of, r_of;
  std::vector<uint64_t> self_of, base_self_of;
  const uint64_t base_total = nodes_[0].base;
  // The rate test of draws as diff.cc's: a draw stands for the side's mean
  // weight in samples.
  double base_exposure = base_exposure_, new_exposure = new_exposure_;
  if (observed_both) {
    base_exposure *= static_cast<double>(nodes_[0].base_observations) / static_cast<double>(base_total);
    new_exposure *= static_cast<double>(nodes_[0].observations) / static_cast<double>(nodes_[0].total);
  }
  if (differential_) {
    out += fmt::format("\"base_total\":{},\"rate_per\":\"{}\",", base_total, per_wall_second_ ? "wall_second" : "run");
    // Self samples (and draws) of each side: the node's less its children's.
    self_of.assign(nodes_.size(), 0);
    base_self_of.assign(nodes_.size(), 0);
    std::vector<uint64_t> self_draws(nodes_.size(), 0), base_self_draws(nodes_.size(), 0);
    for (size_t i = 0; i < nodes_.size(); ++i) {
      const Node& node = nodes_[i];
      uint64_t v = node.total, b = node.base, w = node.observations, bw = node.base_observations;
      for (const auto& [key, child] : node.children) {
        const Node& c = nodes_[child];
        v -= std::min(v, c.total);
        b -= std::min(b, c.base);
        w -= std::min(w, c.observations);
        bw -= std::min(bw, c.base_observations);
      }
      self_of[i] = v;
      base_self_of[i] = b;
      self_draws[i] = w;
      base_self_draws[i] = bw;
    }
    // Every node but the root (100 % on both sides) is a test.
    std::vector<size_t> tested;
    std::vector<double> p, rate_p;
    for (size_t i = 1; i < nodes_.size(); ++i) {
      if (!nodes_[i].total && !nodes_[i].base) continue;
      double z;
      tested.push_back(i);
      p.push_back(observed_both ? diff_test(nodes_[i].base_observations, nodes_[0].base_observations,
                                            nodes_[i].observations, total_observations, &z)
                                : diff_test(nodes_[i].base, base_total, nodes_[i].total, total, &z));
      rate_p.push_back(observed_both
                           ? poisson_rate_test(base_self_draws[i], base_exposure, self_draws[i], new_exposure, &z)
                           : poisson_rate_test(base_self_of[i], base_exposure, self_of[i], new_exposure, &z));
    }
    const std::vector<double> q = benjamini_hochberg(p), r = benjamini_hochberg(rate_p);
    q_of.assign(nodes_.size(), 1.0);
    r_of.assign(nodes_.size(), 1.0);
    for (size_t j = 0; j < tested.size(); ++j) {
      q_of[tested[j]] = q[j];
      r_of[tested[j]] = r[j];
    }
  }
  // The base's self samples in the new profile's: what it would have with
  // the base's rate.
  const double scale = base_exposure_ > 0 ? new_exposure_ / base_exposure_ : 0;
  append_table(out, "names", names_);
  append_table(out, "objects", objects_);
  out += "\"tree\":";
  // Depth first without recursion (stacks may be hundreds of frames deep):
  // each pending entry is a node whose children are being written.
  struct Pending {
    std::vector<uint32_t> children;  // in name order
    size_t next = 0;
  };
  std::vector<Pending> pending;
  auto open = [&](uint32_t id) {
    const Node& node = nodes_[id];
    out += fmt::format("{{\"n\":{},\"o\":{},\"v\":{}", node.name, node.object, node.total);
    if (node.inlined) out += ",\"i\":1";
    if (observed) out += fmt::format(",\"w\":{}", node.observations);
    if (differential_) {
      out += fmt::format(",\"b\":{},\"q\":{:.3g},\"r\":{:.3g}", node.base, q_of[id], r_of[id]);
      const double delta = static_cast<double>(self_of[id]) - static_cast<double>(base_self_of[id]) * scale;
      if (r_of[id] < kDiffLevel && delta != 0) out += fmt::format(",\"d\":{:.6g}", delta);
    }
    if (node.children.empty()) {
      out += '}';
      return;
    }
    out += ",\"c\":[";
    Pending p;
    for (const auto& [key, child] : node.children) p.children.push_back(child);
    std::stable_sort(p.children.begin(), p.children.end(), [this](uint32_t a, uint32_t b) {
      const Node &x = nodes_[a], &y = nodes_[b];
      if (names_[x.name] != names_[y.name]) return names_[x.name] < names_[y.name];
      return objects_[x.object] < objects_[y.object];
    });
    pending.push_back(std::move(p));
  };
  open(0);
  while (!pending.empty()) {
    Pending& top = pending.back();
    if (top.next == top.children.size()) {
      pending.pop_back();
      out += "]}";
      continue;
    }
    if (top.next) out += ',';
    open(top.children[top.next++]);  // may grow `pending`: `top` is not used after
  }
  return out + "}";
}

namespace {

// Adds every stack of `set` to the graph (as the base's with `base`).
void add_stacks(FlameGraph& graph, const StackSet& set, bool base) {
  // Each distinct frame's label and object name once.
  std::vector<std::string> labels, objects;
  for (const StackFrame& frame : set.frames()) {
    labels.push_back(frame.inlined ? frame.function + " (inline)" : frame.function);  // frame_label's mark
    objects.push_back(frame.object.empty() ? "" : object_basename(frame.object));
  }
  std::vector<FlameFrame> frames;
  for (const Stack& stack : set.stacks()) {
    frames.clear();
    for (FrameId id : stack.frames) frames.push_back({labels[id], objects[id], set.frames()[id].inlined});
    if (base)
      graph.add_base(frames, stack.count, stack.observations);
    else
      graph.add(frames, stack.count, stack.observations);
  }
}

}  // namespace

FlameGraph flame_graph_of(const StackSet& set) {
  FlameGraph graph;
  add_stacks(graph, set, false);
  return graph;
}

FlameGraph differential_flame_graph(const StackSet& base, const StackSet& changed, const Diff& diff) {
  FlameGraph graph;
  // Without a period (or a duration) on a side, its samples are taken at
  // the other's rate: a change in samples is still one.
  const auto [base_exposure, new_exposure] = diff_exposures(diff);
  if (base_exposure > 0 && new_exposure > 0) graph.set_exposures(base_exposure, new_exposure, diff.per_wall_second);
  add_stacks(graph, changed, false);
  add_stacks(graph, base, true);
  return graph;
}

FlameGraph build_flame_graph(const Report& report) {
  if (report.view != View::address) return flame_graph_of(*report.stacks);
  // The address view's rows are its leaves: its graph is the folded view's
  // stacks, every line (no --top or --min-percent), by function, each frame
  // named object`function and split there again (the [truncated] root has
  // no object), as the graph read from the folded text has always been.
  ReportOptions folded = report.options;
  folded.top = 0;
  folded.min_percent = 0;
  folded.folded_objects = true;
  const NamedStacks named = folded_stacks(*report.stacks, folded);
  std::vector<FlameFrame> split(named.names.size());
  for (size_t i = 0; i < named.names.size(); ++i) {
    const std::string_view name = named.names[i];
    const size_t tick = name.find('`');
    split[i] = tick == std::string_view::npos ? FlameFrame{name, {}, false}
                                              : FlameFrame{name.substr(tick + 1), name.substr(0, tick), false};
  }
  FlameGraph graph;
  std::vector<FlameFrame> frames;
  for (const auto& [stack, count] : named.stacks) {
    frames.clear();
    for (FrameId id : stack->frames) frames.push_back(split[named.name_of[id]]);
    graph.add(frames, count);
  }
  return graph;
}

}  // namespace profiling::report
