#include "report/call_relations.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "report/render.h"

namespace profiling::report {

std::vector<CallRelations> call_relations(const StackSet& set, const FocusPattern& pattern) {
  // Frames of one function and object are one function, inlined or not
  // and whatever their lines.
  const std::vector<StackFrame>& frames = set.frames();
  std::map<std::pair<std::string, std::string>, uint32_t> function_ids;
  std::vector<uint32_t> function_of(frames.size());
  std::vector<const StackFrame*> function_frame;
  for (size_t i = 0; i < frames.size(); ++i) {
    auto [it, inserted] = function_ids.try_emplace({frames[i].function, frames[i].object}, function_frame.size());
    if (inserted) function_frame.push_back(&frames[i]);
    function_of[i] = it->second;
  }
  std::vector<int> relation_of(function_frame.size(), -1);
  std::vector<CallRelations> out;
  for (size_t f = 0; f < function_frame.size(); ++f)
    if (function_frame[f]->function != format::kTruncatedFrame && !function_frame[f]->task &&
        pattern.found_in(function_frame[f]->function)) {
      relation_of[f] = static_cast<int>(out.size());
      out.push_back(CallRelations{function_frame[f]->function, function_frame[f]->object, 0, 0, {}, {}});
    }
  // Edges: (relation, other function, inlined, callee side) -> samples.
  std::map<std::tuple<int, uint32_t, bool, bool>, uint64_t> edges;
  std::set<std::tuple<int, uint32_t, bool, bool>> in_stack;
  std::set<int> through;
  for (const Stack& stack : set.stacks()) {
    in_stack.clear();
    through.clear();
    const size_t depth = stack.frames.size();
    for (size_t i = 0; i < depth; ++i) {
      const int r = relation_of[function_of[stack.frames[i]]];
      if (r < 0) continue;
      through.insert(r);
      if (i + 1 == depth) format::saturating_add(out[r].self, stack.count);
      if (i > 0) in_stack.emplace(r, function_of[stack.frames[i - 1]], frames[stack.frames[i]].inlined, false);
      if (i + 1 < depth) in_stack.emplace(r, function_of[stack.frames[i + 1]], frames[stack.frames[i + 1]].inlined, true);
    }
    for (int r : through) format::saturating_add(out[r].cumulative, stack.count);
    for (const auto& edge : in_stack) format::saturating_add(edges[edge], stack.count);
  }
  for (const auto& [edge, samples] : edges) {
    const auto& [r, other, inlined, callee] = edge;
    CallRelations& relation = out[r];
    CallEdge e{function_frame[other]->function, function_frame[other]->object, inlined, samples,
               relation.cumulative ? 100.0 * static_cast<double>(samples) / static_cast<double>(relation.cumulative) : 0};
    (callee ? relation.callees : relation.callers).push_back(std::move(e));
  }
  auto hottest = [](const CallEdge& a, const CallEdge& b) {
    return a.samples != b.samples ? a.samples > b.samples : a.function < b.function;
  };
  for (CallRelations& relation : out) {
    std::stable_sort(relation.callers.begin(), relation.callers.end(), hottest);
    std::stable_sort(relation.callees.begin(), relation.callees.end(), hottest);
  }
  std::erase_if(out, [](const CallRelations& r) { return r.cumulative == 0; });
  std::stable_sort(out.begin(), out.end(),
                   [](const CallRelations& a, const CallRelations& b) { return a.cumulative > b.cumulative; });
  return out;
}

namespace {

const char* relation_name(Relation which) { return which == Relation::callers ? "callers" : "callees"; }
const std::vector<CallEdge>& edges_of(const CallRelations& r, Relation which) {
  return which == Relation::callers ? r.callers : r.callees;
}
std::string edge_label(const CallEdge& e) { return e.inlined ? e.function + " (inline)" : e.function; }
}  // namespace

std::string render_relations_text(const std::vector<CallRelations>& relations, Relation which,
                                  const Summary& summary, bool colour) {
  const char* bold = colour ? "\x1b[1m" : "";
  const char* reset = colour ? "\x1b[0m" : "";
  std::string out = fmt::format("{}profil report, {}: {}{}\n", bold, relation_name(which), describe_summary(summary),
                                reset) +
                    files_line(summary);
  if (relations.empty()) return out + "\nno function matches\n";
  for (const CallRelations& r : relations) {
    out += fmt::format("\n{}{}{}  ({})  total {} ({:.2f}%), self {} ({:.2f}%)\n", bold,
                       shorten_name(r.function, kNameColumn), reset, object_basename(r.object), r.cumulative,
                       percent_of(r.cumulative, summary.samples), r.self, percent_of(r.self, summary.samples));
    out += fmt::format("{:>10}  {:>7}  {}\n", "samples", "share", which == Relation::callers ? "caller" : "callee");
    for (const CallEdge& e : edges_of(r, which))
      out += fmt::format("{:>10}  {:>6.2f}%  {}  ({})\n", e.samples, e.share, shorten_name(edge_label(e), kNameColumn),
                         object_basename(e.object));
    if (which == Relation::callees && r.self)
      out += fmt::format("{:>10}  {:>6.2f}%  [self]\n", r.self,
                         r.cumulative ? 100.0 * static_cast<double>(r.self) / static_cast<double>(r.cumulative) : 0);
  }
  out += fmt::format("\nshare: of the function's total samples (an edge counts once per stack)\n");
  return out;
}

std::string render_relations_csv(const std::vector<CallRelations>& relations, Relation which) {
  std::string out = fmt::format("function,object,total_samples,self_samples,{},{}_object,inline,samples,share\n",
                                which == Relation::callers ? "caller" : "callee",
                                which == Relation::callers ? "caller" : "callee");
  auto field = [](const std::string& text) {
    if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
    std::string quoted = "\"";
    for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    return quoted + "\"";
  };
  for (const CallRelations& r : relations)
    for (const CallEdge& e : edges_of(r, which))
      out += fmt::format("{},{},{},{},{},{},{},{},{:.4f}\n", field(r.function), field(object_basename(r.object)),
                         r.cumulative, r.self, field(e.function), field(object_basename(e.object)), e.inlined ? 1 : 0,
                         e.samples, e.share);
  return out;
}

std::string render_relations_json(const std::vector<CallRelations>& relations, Relation which,
                                  const Summary& summary) {
  std::string out = fmt::format("{{\"schema\":\"profil-{}/1\",\"summary\":{},\"functions\":[", relation_name(which),
                                render_summary_json(summary));
  for (size_t i = 0; i < relations.size(); ++i) {
    const CallRelations& r = relations[i];
    out += fmt::format("{}\n{{\"function\":\"{}\",\"object\":\"{}\",\"total_samples\":{},\"self_samples\":{},\"{}\":[",
                       i ? "," : "", json_escape(r.function), json_escape(object_basename(r.object)), r.cumulative,
                       r.self, relation_name(which));
    const auto& edges = edges_of(r, which);
    for (size_t j = 0; j < edges.size(); ++j)
      out += fmt::format("{}{{\"function\":\"{}\",\"object\":\"{}\",\"inline\":{},\"samples\":{},\"share\":{:.4f}}}",
                         j ? "," : "", json_escape(edges[j].function), json_escape(object_basename(edges[j].object)),
                         edges[j].inlined ? "true" : "false", edges[j].samples, edges[j].share);
    out += "]}";
  }
  return out + "\n]}\n";
}

}  // namespace profiling::report
