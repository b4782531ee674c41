#include "top_view.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

namespace profiling::cli {

TopKey apply_key(TopViewState* state, int key) {
  switch (key) {
    case 'q':
    case 'Q':
    case 3:  // ^C: the terminal is raw, so it comes as a key
      return TopKey::quit;
    case 's':
      state->window = state->window == TopWindow::last ? TopWindow::since_start : TopWindow::last;
      return TopKey::changed;
    case 't':
      state->measure = state->measure == TopMeasure::self ? TopMeasure::total : TopMeasure::self;
      return TopKey::changed;
    case 'f':
      state->frozen = !state->frozen;
      return TopKey::changed;
    case 'm':
      state->threads_merged = !state->threads_merged;
      return TopKey::changed;
    case 'p':
      return TopKey::ask_process;
    default:
      return TopKey::ignored;
  }
}

bool process_matches(const std::string& asked, int32_t pid, const std::string& name) {
  if (asked.empty()) return true;
  if (std::all_of(asked.begin(), asked.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return asked == std::to_string(pid);
  return name.find(asked) != std::string::npos;
}

namespace {

uint64_t value(const TopRow& row, TopWindow window, TopMeasure measure) {
  const TopCounts& c = window == TopWindow::last ? row.last : row.all;
  return measure == TopMeasure::self ? c.self : c.total;
}

std::string fit(std::string text, size_t width) {
  if (text.size() > width) text.resize(width);
  return text;
}

std::string format_line(const char* format, auto... args) {
  char buffer[512];
  std::snprintf(buffer, sizeof buffer, format, args...);
  return buffer;
}

std::string share(uint64_t part, uint64_t whole) {
  if (whole == 0 || part == 0) return "     -";
  return format_line("%6.1f", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
}

}  // namespace

std::vector<TopRow> shown_rows(const TopSnapshot& snapshot, const TopViewState& state) {
  std::vector<TopRow> rows;
  std::map<std::tuple<int32_t, std::string, std::string>, size_t> merged;  // (pid, function, object) -> row
  std::map<size_t, std::set<int32_t>> threads;                             // row -> its threads
  for (const TopRow& row : snapshot.rows) {
    if (!process_matches(state.process, row.pid, row.process)) continue;
    if (!state.threads_merged) {
      rows.push_back(row);
      continue;
    }
    auto [it, added] = merged.try_emplace({row.pid, row.function, row.object}, rows.size());
    if (added) {
      rows.push_back(row);
      rows.back().tid = 0;
    } else {
      TopRow& into = rows[it->second];
      into.last.self += row.last.self;
      into.last.total += row.last.total;
      into.all.self += row.all.self;
      into.all.total += row.all.total;
    }
    threads[it->second].insert(row.tid);
  }
  for (const auto& [index, tids] : threads)
    if (tids.size() > 1) rows[index].thread = std::to_string(tids.size()) + " threads";
  const TopWindow other = state.window == TopWindow::last ? TopWindow::since_start : TopWindow::last;
  std::sort(rows.begin(), rows.end(), [&](const TopRow& a, const TopRow& b) {
    const auto key = [&](const TopRow& r) {
      return std::make_tuple(value(r, state.window, state.measure), value(r, other, state.measure));
    };
    if (key(a) != key(b)) return key(a) > key(b);
    return std::tie(a.function, a.object, a.pid, a.tid) < std::tie(b.function, b.object, b.pid, b.tid);
  });
  return rows;
}

std::vector<std::string> render_top(const TopSnapshot& snapshot, const TopViewState& state, const TopHeader& header,
                                    int width, int height) {
  const auto w = static_cast<size_t>(std::max(width, 20));
  std::vector<std::string> lines;
  uint64_t last = 0, all = 0;
  for (const auto& [pid, samples] : snapshot.process_samples) {
    const auto name = snapshot.process_names.find(pid);
    if (!process_matches(state.process, pid, name == snapshot.process_names.end() ? "" : name->second)) continue;
    last += samples.last;
    all += samples.all;
  }
  // What changes how the rows read comes first, before a narrow screen cuts it.
  // An event's rate is its period (issue 33): "page-faults every 1".
  const std::string rate = header.event.empty() ? format_line("%u Hz", header.hz) : header.event;
  std::string title = std::string("profil top") + (state.frozen ? " [FROZEN]" : "") + "  " + header.target +
                      format_line("  %s  sorted by %s, %s", rate.c_str(),
                      state.measure == TopMeasure::self ? "self" : "total",
                      state.window == TopWindow::last ? "last 1 s" : "since start");
  if (!state.process.empty()) title += "  process: " + state.process;
  if (state.threads_merged) title += "  threads merged";
  lines.push_back(fit(title, w));
  lines.push_back(fit(format_line("  --last 1 s--  -since start-  samples: %llu in the last window, %llu since the start",
                                  static_cast<unsigned long long>(last), static_cast<unsigned long long>(all)),
                      w));
  const bool self = state.measure == TopMeasure::self, now = state.window == TopWindow::last;
  // The function takes what the other columns leave (78 bytes), 40 at least.
  const int function_width = std::max(40, static_cast<int>(w) - 78);
  const auto head = [&](bool window, bool measure_self) {
    return std::string(window && self == measure_self ? "*" : " ") + (measure_self ? " self" : "total");
  };
  lines.push_back(fit(" " + head(now, true) + " " + head(now, false) + "  " + head(!now, true) + " " +
                          head(!now, false) + "  " +
                          format_line("%-*s %7s %-15s %7s %-15s", function_width, "FUNCTION (OBJECT)", "PID", "PROCESS",
                                      "TID", "THREAD"),
                      w));
  const std::vector<TopRow> rows = shown_rows(snapshot, state);
  const size_t room = height > 4 ? static_cast<size_t>(height) - 4 : 0;
  for (size_t i = 0; i < rows.size() && i < room; ++i) {
    const TopRow& r = rows[i];
    std::string function = r.function + (r.object.empty() ? "" : " (" + r.object + ")");
    if (function.size() > static_cast<size_t>(function_width))
      function = function.substr(0, static_cast<size_t>(function_width) - 1) + "~";
    const std::string tid = r.tid == 0 ? "" : std::to_string(r.tid);
    lines.push_back(fit(format_line("%s %s  %s %s  %-*s %7d %-15.15s %7s %-15.15s", share(r.last.self, last).c_str(),
                                    share(r.last.total, last).c_str(), share(r.all.self, all).c_str(),
                                    share(r.all.total, all).c_str(), function_width, function.c_str(), static_cast<int>(r.pid),
                                    r.process.c_str(), tid.c_str(), r.thread.c_str()),
                        w));
  }
  while (lines.size() + 1 < static_cast<size_t>(std::max(height, 4))) lines.emplace_back();
  std::string status = format_line("sampled %llu  lost %llu", static_cast<unsigned long long>(header.samples),
                                   static_cast<unsigned long long>(header.lost));
  if (!header.ended.empty()) status += "  " + header.ended;
  status += "  | s sort  t self/total  p process  m threads  f freeze  q quit";
  lines.push_back(fit(status, w));
  return lines;
}

}  // namespace profiling::cli
