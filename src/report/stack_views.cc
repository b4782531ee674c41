#include "report/stack_views.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "report/render.h"

namespace profiling::report {

namespace {

// The thread and process views: a row per root frame, with every sample of
// its stacks.
void task_rows(const StackSet& set, const ReportOptions& options, Report* report) {
  const std::vector<uint64_t> cumulative = set.cumulative_by_frame();
  const std::vector<uint64_t> observations = set.cumulative_by_frame(&Stack::observations);
  std::vector<FrameId> order;
  for (FrameId id = 0; id < set.frames().size(); ++id)
    if (set.frames()[id].task && cumulative[id] > 0) order.push_back(id);
  // Most samples first (self and total are one here), or by name; ties by
  // id (tid, or pid).
  std::stable_sort(order.begin(), order.end(), [&](FrameId a, FrameId b) {
    const StackFrame &x = set.frames()[a], &y = set.frames()[b];
    if (options.sort == RowOrder::name && x.raw_function != y.raw_function) return x.raw_function < y.raw_function;
    if (options.sort != RowOrder::name && cumulative[a] != cumulative[b]) return cumulative[a] > cumulative[b];
    return std::pair(x.pid, x.tid) < std::pair(y.pid, y.tid);
  });
  report->rows_before_filter = order.size();
  const uint64_t n = set.total();
  for (FrameId id : order) {
    const StackFrame& f = set.frames()[id];
    Row row;
    row.samples = row.cumulative_samples = cumulative[id];
    row.percent = row.cumulative_percent = percent_of(cumulative[id], n);
    row.observations = observations[id];
    row.interval = share_interval(cumulative[id], row.observations, n, set.total_observations());
    if (options.min_percent > 0 && row.percent < options.min_percent) continue;
    row.function = row.raw_function = f.function;
    row.tid = f.tid;
    row.pid = f.pid;
    row.task_name = f.raw_function;
    report->rows.push_back(std::move(row));
    if (options.top && report->rows.size() >= options.top) break;
  }
  report->samples_shown = 0;
  for (const Row& row : report->rows) format::saturating_add(report->samples_shown, row.samples);
}

}  // namespace

void rows_from_stacks(const StackSet& set, const ReportOptions& options, Report* report) {
  if (options.view == View::thread || options.view == View::process) {
    task_rows(set, options, report);
    return;
  }
  const std::vector<StackFrame>& frames = set.frames();
  // Frames -> rows: one row per function and object (and line in the line
  // view; the object alone in the object view), inlined or not.
  struct Key {
    std::string object, function, file;
    int line = 0;
    auto operator<=>(const Key&) const = default;
  };
  std::map<Key, uint32_t> row_ids;
  std::vector<uint32_t> row_of(frames.size(), UINT32_MAX);
  std::vector<std::map<Key, uint32_t>::iterator> key_of(frames.size());  // map iterators stay valid
  std::vector<const StackFrame*> example;
  for (size_t i = 0; i < frames.size(); ++i) {
    const StackFrame& f = frames[i];
    if ((f.function == format::kTruncatedFrame && f.object.empty()) || f.task) continue;  // not a function
    Key key{f.object, options.view == View::object ? "" : f.function,
            options.view == View::line ? f.file : "", options.view == View::line ? f.line : 0};
    key_of[i] = row_ids.try_emplace(std::move(key), 0).first;
    row_of[i] = 0;  // numbered below, in key order
  }
  // Rows numbered in key order, so that ties keep a name order.
  {
    uint32_t n = 0;
    std::vector<const StackFrame*> ordered(row_ids.size());
    for (auto& [key, id] : row_ids) id = n++;
    for (size_t i = 0; i < frames.size(); ++i) {
      if (row_of[i] == UINT32_MAX) continue;
      row_of[i] = key_of[i]->second;
      ordered[row_of[i]] = &frames[i];
    }
    example = std::move(ordered);
  }
  std::vector<uint64_t> self(row_ids.size(), 0), cumulative(row_ids.size(), 0), self_observations(row_ids.size(), 0);
  std::vector<size_t> seen(row_ids.size(), SIZE_MAX);
  for (size_t s = 0; s < set.stacks().size(); ++s) {
    const Stack& stack = set.stacks()[s];
    const uint32_t leaf = row_of[stack.frames.back()];
    if (leaf != UINT32_MAX) {
      format::saturating_add(self[leaf], stack.count);
      format::saturating_add(self_observations[leaf], stack.observations);
    }
    for (FrameId id : stack.frames) {
      const uint32_t row = row_of[id];
      if (row == UINT32_MAX || seen[row] == s) continue;  // recursion counts once
      seen[row] = s;
      format::saturating_add(cumulative[row], stack.count);
    }
  }
  std::vector<uint32_t> order;
  for (uint32_t r = 0; r < row_ids.size(); ++r)
    if (cumulative[r] > 0) order.push_back(r);
  // Hottest first (self, then cumulative; --sort total the other way
  // round), or by name; ties in key order (object, function, file, line).
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    switch (options.sort) {
      case RowOrder::self: break;
      case RowOrder::total:
        return cumulative[a] != cumulative[b] ? cumulative[a] > cumulative[b] : self[a] > self[b];
      case RowOrder::name: {
        // As the rows show them: the function, then the object's base name.
        const StackFrame &x = *example[a], &y = *example[b];
        if (options.view != View::object && x.function != y.function) return x.function < y.function;
        return object_basename(x.object) < object_basename(y.object);
      }
    }
    return self[a] != self[b] ? self[a] > self[b] : cumulative[a] > cumulative[b];
  });
  report->rows_before_filter = row_ids.size();
  report->rows.reserve(options.top ? std::min<size_t>(options.top, order.size()) : order.size());
  const uint64_t n = set.total();
  for (uint32_t r : order) {
    Row row;
    row.samples = self[r];
    row.percent = percent_of(self[r], n);
    row.observations = self_observations[r];
    row.interval = share_interval(self[r], row.observations, n, set.total_observations());
    row.cumulative_samples = cumulative[r];
    row.cumulative_percent = percent_of(cumulative[r], n);
    if (options.min_percent > 0 && row.percent < options.min_percent && row.cumulative_percent < options.min_percent)
      continue;
    const StackFrame& f = *example[r];
    if (options.view != View::object) {
      row.function = f.function;
      row.raw_function = f.raw_function;
    }
    row.object_path = f.object;
    row.object = object_basename(f.object);
    if (options.view == View::line) {
      row.file = f.file;
      row.line = f.line;
    }
    report->rows.push_back(std::move(row));
    if (options.top && report->rows.size() >= options.top) break;
  }
  report->samples_shown = 0;
  for (const Row& row : report->rows) format::saturating_add(report->samples_shown, row.samples);
}

namespace {

NamedStacks name_stacks(const StackSet& set, const ReportOptions& options, bool for_text) {
  NamedStacks out;
  std::unordered_map<std::string, uint32_t> name_ids;
  out.name_of.resize(set.frames().size());
  for (size_t i = 0; i < set.frames().size(); ++i) {
    const StackFrame& f = set.frames()[i];
    const bool truncated = (f.function == format::kTruncatedFrame && f.object.empty()) || f.task;
    std::string name = truncated                        ? f.function
                       : options.view == View::object   ? object_basename(f.object)
                       : options.folded_objects && !for_text ? object_basename(f.object) + "`" + frame_label(f)
                                                        : frame_label(f);
    if (for_text && !truncated && options.view != View::object) name = shorten_name(name, kNameColumn);
    // ';' separates frames and the last space the count: a ';' inside a
    // name (C++ templates may hold one) becomes ':'; spaces may stay.
    std::replace(name.begin(), name.end(), ';', ':');
    std::replace(name.begin(), name.end(), '\n', ' ');
    auto [it, inserted] = name_ids.try_emplace(name, static_cast<uint32_t>(out.names.size()));
    if (inserted) out.names.push_back(std::move(name));
    out.name_of[i] = it->second;
  }
  auto same = [&](const Stack& a, const Stack& b) {
    return a.frames.size() == b.frames.size() &&
           std::equal(a.frames.begin(), a.frames.end(), b.frames.begin(),
                      [&](FrameId x, FrameId y) { return out.name_of[x] == out.name_of[y]; });
  };
  std::unordered_multimap<size_t, size_t> index;  // hash of the names -> entry
  for (const Stack& stack : set.stacks()) {
    size_t h = 1469598103934665603ull;
    for (FrameId id : stack.frames) h = (h ^ out.name_of[id]) * 1099511628211ull;
    size_t at = SIZE_MAX;
    for (auto [it, end] = index.equal_range(h); it != end && at == SIZE_MAX; ++it)
      if (same(*out.stacks[it->second].first, stack)) at = it->second;
    if (at == SIZE_MAX) {
      at = out.stacks.size();
      index.emplace(h, at);
      out.stacks.emplace_back(&stack, 0);
    }
    format::saturating_add(out.stacks[at].second, stack.count);
  }
  return out;
}

}  // namespace

NamedStacks folded_stacks(const StackSet& set, const ReportOptions& options) {
  NamedStacks named = name_stacks(set, options, false);
  auto& lines = named.stacks;
  if (options.min_percent > 0)
    std::erase_if(lines, [&](const auto& line) { return percent_of(line.second, set.total()) < options.min_percent; });
  // Hottest first; ties in the order the stacks were first met.
  std::stable_sort(lines.begin(), lines.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  if (options.top && lines.size() > options.top) lines.resize(options.top);
  return named;
}

std::string folded_text(const StackSet& set, const ReportOptions& options) {
  const NamedStacks named = folded_stacks(set, options);
  // Sized first: deep stacks make this the largest thing the report holds,
  // and a string grown by doubling would peak at twice it.
  size_t size = 0;
  for (const auto& [stack, count] : named.stacks) {
    for (FrameId id : stack->frames) size += named.names[named.name_of[id]].size() + 1;
    size += 21;
  }
  std::string out;
  out.reserve(size);
  for (const auto& [stack, count] : named.stacks) {
    for (size_t i = 0; i < stack->frames.size(); ++i) {
      if (i) out += ';';
      out += named.names[named.name_of[stack->frames[i]]];
    }
    out += fmt::format(" {}\n", count);
  }
  return out;
}

std::string tree_text(const StackSet& set, const ReportOptions& options, const Summary& summary) {
  const NamedStacks named = name_stacks(set, options, true);
  // The stacks merged from the root: a node per distinct path of names.
  struct Node {
    uint32_t name;
    uint64_t total = 0, self = 0;
    std::map<uint32_t, size_t> children;  // name -> node
  };
  std::vector<Node> nodes(1, Node{UINT32_MAX, 0, 0, {}});
  for (const auto& [stack, count] : named.stacks) {
    size_t at = 0;
    for (FrameId id : stack->frames) {
      const uint32_t name = named.name_of[id];
      auto [it, inserted] = nodes[at].children.try_emplace(name, nodes.size());
      if (inserted) nodes.push_back(Node{name, 0, 0, {}});
      at = it->second;
      format::saturating_add(nodes[at].total, count);
    }
    format::saturating_add(nodes[at].self, count);
  }
  std::string out = fmt::format("profil report by call tree: {}\n", describe_summary(summary)) + files_line(summary);
  out += fmt::format("\n{:>10}  {:>7}  {:>10}  {}\n", "total", "percent", "self", "function (callees indented)");
  // Depth first, hottest child first (ties by name); an iterative walk,
  // so that no stack depth can exhaust ours.
  std::vector<std::pair<size_t, size_t>> pending;  // (node, depth)
  auto push_children = [&](size_t node, size_t depth) {
    std::vector<size_t> children;
    for (const auto& [name, child] : nodes[node].children) children.push_back(child);
    std::stable_sort(children.begin(), children.end(), [&](size_t a, size_t b) {
      if (nodes[a].total != nodes[b].total) return nodes[a].total > nodes[b].total;
      return named.names[nodes[a].name] < named.names[nodes[b].name];
    });
    for (auto child = children.rbegin(); child != children.rend(); ++child) pending.emplace_back(*child, depth);
  };
  push_children(0, 0);
  while (!pending.empty()) {
    const auto [node, depth] = pending.back();
    pending.pop_back();
    const double percent = percent_of(nodes[node].total, set.total());
    if (options.min_percent > 0 && percent < options.min_percent) continue;  // and its callees
    out += fmt::format("{:>10}  {:>6.2f}%  {:>10}  {}{}\n", nodes[node].total, percent, nodes[node].self,
                       std::string(2 * std::min<size_t>(depth, 64), ' '), named.names[nodes[node].name]);
    push_children(node, depth + 1);
  }
  return out;
}

}  // namespace profiling::report
