#include "report/report.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <set>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>
#include <re2/re2.h>

#include "report/child_output.h"
#include "report/stack_views.h"
#include "report/stacks.h"

namespace profiling::report {

const char* view_name(View view) {
  switch (view) {
    case View::function: return "function";
    case View::line: return "line";
    case View::object: return "object";
    case View::address: return "address";
    case View::thread: return "thread";
    case View::process: return "process";
  }
  return "?";
}

bool parse_view(const std::string& text, View* view) {
  for (View v : {View::function, View::line, View::object, View::address, View::thread, View::process})
    if (text == view_name(v)) {
      *view = v;
      return true;
    }
  return false;
}

const char* row_order_name(RowOrder order) {
  switch (order) {
    case RowOrder::self: return "self";
    case RowOrder::total: return "total";
    case RowOrder::name: return "name";
  }
  return "?";
}

bool parse_row_order(const std::string& text, RowOrder* order) {
  for (RowOrder o : {RowOrder::self, RowOrder::total, RowOrder::name})
    if (text == row_order_name(o)) {
      *order = o;
      return true;
    }
  return false;
}

Interval wilson_interval(uint64_t k, uint64_t n, double z) {
  if (n == 0) return {0, 0};
  return wilson_share_interval(static_cast<double>(k) / static_cast<double>(n), static_cast<double>(n), z);
}

Interval wilson_share_interval(double p, double nn, double z) {
  if (!(nn > 0)) return {0, 0};
  const double z2 = z * z;
  double denominator = 1 + z2 / nn;
  double center = (p + z2 / (2 * nn)) / denominator;
  double half = z / denominator * std::sqrt(p * (1 - p) / nn + z2 / (4 * nn * nn));
  return {std::max(0.0, center - half) * 100, std::min(1.0, center + half) * 100};
}

double share_variance(uint64_t count, uint64_t observations, uint64_t total, uint64_t total_observations) {
  if (total == 0) return 0;
  const double c = static_cast<double>(std::min(count, total)), C = static_cast<double>(total);
  const double p = c / C;
  if (total_observations == 0) return p * (1 - p) / C;
  const double k = static_cast<double>(std::min(observations, total_observations));
  const double n = static_cast<double>(total_observations);
  // A row with no draw (CPU time measured, not sampled: [unsampled: ...])
  // adds no noise of its own; likewise the others when it has them all.
  double variance = 0;
  if (k > 0) variance += (1 - p) * (1 - p) * c * c / k;
  if (n > k) variance += p * p * (C - c) * (C - c) / (n - k);
  return variance / (C * C);
}

Interval share_interval(uint64_t count, uint64_t observations, uint64_t total, uint64_t total_observations) {
  // Without observations, or one draw per count (the outside sampler's
  // records): the counts are the draws, as before, to the last digit.
  if (total_observations == 0 || total == 0 || (count == observations && total == total_observations))
    return wilson_interval(count, total);
  const double p = static_cast<double>(std::min(count, total)) / static_cast<double>(total);
  const double variance = share_variance(count, observations, total, total_observations);
  return wilson_share_interval(p, variance > 0 ? p * (1 - p) / variance : static_cast<double>(total_observations));
}

FocusPattern::FocusPattern(const std::string& pattern) {
  RE2::Options options;
  options.set_log_errors(false);
  auto re = std::make_shared<const RE2>(pattern, options);
  if (!re->ok()) throw std::invalid_argument(re->error());
  re_ = std::move(re);
}

bool FocusPattern::found_in(const std::string& text) const { return RE2::PartialMatch(text, *re_); }

double own_percent(const Summary& s) {
  const double all = static_cast<double>(s.samples) + static_cast<double>(s.own_samples);
  return all > 0 ? 100.0 * static_cast<double>(s.own_samples) / all : 0.0;
}

Summary summarize(const SymbolizedProfile& symbolized, const std::vector<std::string>& files) {
  Summary summary;
  const format::Profile& p = *symbolized.profile;
  summary.samples = symbolized.total;
  summary.observations = symbolized.total_observations;
  summary.period_ns = p.period_ns;
  summary.rate_hz = p.period_ns ? 1e9 / static_cast<double>(p.period_ns) : 0;
  summary.cpu_seconds = static_cast<double>(symbolized.total) * static_cast<double>(p.period_ns) / 1e9;
  summary.wall_seconds = static_cast<double>(p.duration_ns) / 1e9;
  summary.dropped = p.dropped;
  summary.own_samples = p.own_samples;
  summary.clock = p.clock;
  summary.event = p.event;
  summary.event_period = p.event_period;
  summary.program = p.program;
  summary.files = files;
  std::set<std::string> objects;
  for (const SymbolizedSample& s : symbolized.samples) objects.insert(s.symbol.object);
  summary.objects = objects.size();
  return summary;
}

std::vector<std::pair<uint64_t, std::string>> disassemble(const std::string& objdump, const std::string& file,
                                                          uint64_t start, uint64_t end) {
  std::vector<std::pair<uint64_t, std::string>> out;
  std::vector<std::string> args = {objdump, "-d", "-w", "-C", "--no-show-raw-insn",
                                   fmt::format("--start-address={:#x}", start),
                                   fmt::format("--stop-address={:#x}", end), file};
  std::string text;
  child_output(args, &text);
  // Instruction lines are "  401136:\tpush   %rbp" (binutils objdump.c).
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    std::string line = text.substr(pos, eol - pos);
    pos = eol + 1;
    size_t colon = line.find(":\t");
    if (colon == std::string::npos) continue;
    size_t first = line.find_first_not_of(' ');
    if (first >= colon) continue;
    uint64_t address = 0;
    auto [ptr, error] = std::from_chars(line.data() + first, line.data() + colon, address, 16);
    if (error != std::errc() || ptr != line.data() + colon) continue;
    std::string instruction = line.substr(colon + 2);
    // objdump pads mnemonics with spaces; one space reads as well.
    std::string squeezed;
    for (char c : instruction) {
      if (c == '\t') c = ' ';
      if (c == ' ' && !squeezed.empty() && squeezed.back() == ' ') continue;
      squeezed += c;
    }
    while (!squeezed.empty() && squeezed.back() == ' ') squeezed.pop_back();
    out.emplace_back(address, squeezed);
  }
  return out;
}

namespace {

struct RowKey {
  std::string object, function, file;
  int line = 0;
  uint64_t address = 0;
  auto operator<=>(const RowKey&) const = default;
};

RowKey key_for(View view, const SymbolizedSample& s) {
  RowKey key;
  key.object = s.symbol.object;
  if (view == View::object) return key;
  key.function = s.symbol.function;
  if (view == View::line) {
    key.file = s.line.file;
    key.line = s.line.line;
  } else if (view == View::address) {
    key.address = s.symbol.file_address;
  }
  return key;
}

}  // namespace

Report build_report(const SymbolizedProfile& symbolized, const ReportOptions& options,
                    const std::vector<std::string>& files, std::shared_ptr<const StackSet> stacks) {
  Report report;
  report.view = options.view;
  report.options = options;
  report.summary = summarize(symbolized, files);
  report.stacks = stacks;
  if (stacks && options.view != View::address) {
    rows_from_stacks(*stacks, options, &report);
    return report;
  }
  std::map<RowKey, uint64_t> groups;
  std::map<RowKey, uint64_t> observations;
  std::map<RowKey, const SymbolizedSample*> example;
  for (const SymbolizedSample& s : symbolized.samples) {
    RowKey key = key_for(options.view, s);
    format::saturating_add(groups[key], s.count);  // no sum passes the saturated total
    format::saturating_add(observations[key], s.observations);
    example.try_emplace(key, &s);
  }
  std::vector<std::pair<RowKey, uint64_t>> sorted(groups.begin(), groups.end());
  // Hottest first (self is total here: the leaves are all there is); ties
  // in name order so that output is deterministic.
  if (options.sort == RowOrder::name) {
    std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
      if (a.first.function != b.first.function) return a.first.function < b.first.function;
      return object_basename(a.first.object) < object_basename(b.first.object);
    });
  } else {
    std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  }
  report.rows_before_filter = sorted.size();
  uint64_t n = symbolized.total;
  for (const auto& [key, count] : sorted) {
    Row row;
    row.samples = count;
    row.percent = n ? 100.0 * static_cast<double>(count) / static_cast<double>(n) : 0;
    row.observations = observations[key];
    row.interval = share_interval(count, row.observations, n, symbolized.total_observations);
    row.cumulative_samples = count;  // without stacks, the leaf is all there is
    row.cumulative_percent = row.percent;
    row.function = drop_symbol_version(key.function);
    row.raw_function = key.function;
    row.object_path = key.object;
    row.object = object_basename(key.object);
    row.file = key.file;
    row.line = key.line;
    row.address = key.address;
    if (options.min_percent > 0 && row.percent < options.min_percent) continue;
    if (options.focus) {
      const std::string& subject = options.view == View::object ? row.object_path : row.function;
      if (!options.focus->found_in(subject)) continue;
    }
    if (options.ignore && options.ignore->found_in(options.view == View::object ? row.object_path : row.function))
      continue;
    report.rows.push_back(std::move(row));
    if (options.top && report.rows.size() >= options.top) break;
  }
  if (options.view == View::address) {
    // One objdump run per function shown, over just that function's bytes.
    std::map<std::pair<std::string, uint64_t>, std::map<uint64_t, std::string>> listings;
    for (Row& row : report.rows) {
      RowKey key{row.object_path, row.raw_function, row.file, row.line, row.address};
      const SymbolizedSample* s = example[key];
      if (!s || !s->symbol.known || !s->mapping) continue;
      auto id = std::make_pair(row.object_path, s->symbol.function_address);
      auto it = listings.find(id);
      if (it == listings.end()) {
        std::map<uint64_t, std::string> listing;
        for (auto& [address, text] : disassemble(options.objdump, s->mapping->path, s->symbol.function_address,
                                                 s->symbol.function_address + s->symbol.function_size))
          listing[address] = std::move(text);
        it = listings.emplace(id, std::move(listing)).first;
      }
      // A sample taken between instruction boundaries (gmon bins) reads as
      // the instruction it falls into.
      auto ins = it->second.upper_bound(row.address);
      if (ins != it->second.begin()) row.instruction = std::prev(ins)->second;
    }
  }
  for (const Row& row : report.rows) format::saturating_add(report.samples_shown, row.samples);
  return report;
}

}  // namespace profiling::report
