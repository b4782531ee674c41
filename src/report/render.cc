#include "report/render.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

namespace profiling::report {

std::string json_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20)
          out += fmt::format("\\u{:04x}", c);
        else
          out += static_cast<char>(c);
    }
  }
  return out;
}

namespace {

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string percent_text(double percent) { return fmt::format("{:.2f}%", percent); }
std::string interval_text(const Interval& i) { return fmt::format("{:.2f}-{:.2f}%", i.low, i.high); }
// Text shows the file's name only (the full path is in CSV and JSON): the
// column stays narrow and reads the same wherever the tree was built.
std::string location_text(const Row& row) {
  std::string file = row.file.empty() ? "??" : object_basename(row.file);
  if (row.line == 0) return file + ":?";
  return fmt::format("{}:{}", file, row.line);
}

// Display width of UTF-8 text: code points (no wide characters expected in
// symbol names).
size_t width_of(const std::string& text) {
  size_t n = 0;
  for (unsigned char c : text)
    if ((c & 0xc0) != 0x80) ++n;
  return n;
}

std::string pad_right(const std::string& text, size_t width) {
  size_t w = width_of(text);
  return w >= width ? text : text + std::string(width - w, ' ');
}
std::string pad_left(const std::string& text, size_t width) {
  size_t w = width_of(text);
  return w >= width ? text : std::string(width - w, ' ') + text;
}

}  // namespace

std::string describe_summary(const Summary& s) {
  std::string text = fmt::format("{} samples", s.samples);
  if (s.period_ns) {
    text += fmt::format(" at {:.6g} Hz ({} ns each) = {:.3f} s of CPU time", s.rate_hz, s.period_ns, s.cpu_seconds);
  }
  if (!s.clock.empty()) text += fmt::format(", {} clock", s.clock);
  if (s.wall_seconds > 0) text += fmt::format(", over {:.3f} s", s.wall_seconds);
  if (s.dropped) text += fmt::format(", {} dropped", s.dropped);
  text += fmt::format(", {} object{}", s.objects, s.objects == 1 ? "" : "s");
  return text;
}

std::string render_text(const Report& report, bool colour) {
  const char* bold = colour ? "\x1b[1m" : "";
  const char* reset = colour ? "\x1b[0m" : "";
  std::vector<std::string> headers = {"samples", "percent", "95% interval"};
  View view = report.view;
  if (view == View::address) headers.push_back("address");
  if (view == View::line) headers.push_back("location");
  if (view != View::object) headers.push_back("function");
  if (view == View::address) headers.push_back("instruction");
  headers.push_back("object");
  std::vector<std::vector<std::string>> cells;
  for (const Row& row : report.rows) {
    std::vector<std::string> line = {std::to_string(row.samples), percent_text(row.percent),
                                     interval_text(row.interval)};
    if (view == View::address) line.push_back(fmt::format("{:#x}", row.address));
    if (view == View::line) line.push_back(location_text(row));
    if (view != View::object) line.push_back(row.function);
    if (view == View::address) line.push_back(row.instruction);
    line.push_back(row.object);
    cells.push_back(std::move(line));
  }
  std::vector<size_t> widths(headers.size());
  for (size_t c = 0; c < headers.size(); ++c) {
    widths[c] = width_of(headers[c]);
    for (const auto& line : cells) widths[c] = std::max(widths[c], width_of(line[c]));
    widths[c] = std::min<size_t>(widths[c], 72);  // a long C++ name does not widen every row
  }
  std::string out = fmt::format("{}profil report by {}: {}{}\n", bold, view_name(view),
                                describe_summary(report.summary), reset);
  if (!report.summary.files.empty()) {
    out += "files:";
    for (const std::string& f : report.summary.files) out += " " + f;
    out += "\n";
  }
  out += "\n";
  auto emit = [&](const std::vector<std::string>& line, bool header, double percent) {
    std::string text;
    for (size_t c = 0; c < line.size(); ++c) {
      bool numeric = c < 3;
      bool last = c + 1 == line.size();
      if (c) text += "  ";
      text += numeric ? pad_left(line[c], widths[c]) : last ? line[c] : pad_right(line[c], widths[c]);
    }
    const char* tint = "";
    if (colour && !header) tint = percent >= 10 ? "\x1b[31m" : percent >= 1 ? "\x1b[33m" : "";
    out += (header ? std::string(bold) : std::string(tint)) + text + ((header || *tint) ? reset : "") + "\n";
  };
  emit(headers, true, 0);
  for (size_t i = 0; i < cells.size(); ++i) emit(cells[i], false, report.rows[i].percent);
  if (report.rows.size() < report.rows_before_filter) {
    out += fmt::format("\n{} of {} rows shown ({:.2f}% of the samples)\n", report.rows.size(),
                       report.rows_before_filter,
                       report.summary.samples
                           ? 100.0 * static_cast<double>(report.samples_shown) /
                                 static_cast<double>(report.summary.samples)
                           : 0.0);
  }
  return out;
}

std::string render_csv(const Report& report) {
  View view = report.view;
  std::string out = "samples,percent,percent_low,percent_high";
  if (view != View::object) out += ",function";
  out += ",object";
  if (view == View::line) out += ",file,line";
  if (view == View::address) out += ",address,instruction";
  out += "\n";
  for (const Row& row : report.rows) {
    out += fmt::format("{},{:.4f},{:.4f},{:.4f}", row.samples, row.percent, row.interval.low, row.interval.high);
    if (view != View::object) out += "," + csv_field(row.function);
    out += "," + csv_field(row.object);
    if (view == View::line) out += "," + csv_field(row.file) + "," + std::to_string(row.line);
    if (view == View::address) out += fmt::format(",{:#x},{}", row.address, csv_field(row.instruction));
    out += "\n";
  }
  return out;
}

namespace {
std::string json_summary(const Summary& s) {
  std::string files;
  for (const std::string& f : s.files) files += (files.empty() ? "\"" : ",\"") + json_escape(f) + "\"";
  return fmt::format(
      "{{\"samples\":{},\"period_ns\":{},\"rate_hz\":{:.6g},\"cpu_seconds\":{:.6f},\"wall_seconds\":{:.6f},"
      "\"dropped\":{},\"clock\":\"{}\",\"program\":\"{}\",\"objects\":{},\"files\":[{}]}}",
      s.samples, s.period_ns, s.rate_hz, s.cpu_seconds, s.wall_seconds, s.dropped, json_escape(s.clock),
      json_escape(s.program), s.objects, files);
}
}  // namespace

std::string render_json(const Report& report) {
  std::string out = fmt::format("{{\"schema\":\"profil-report/1\",\"view\":\"{}\",\"summary\":{},\"rows\":[",
                                view_name(report.view), json_summary(report.summary));
  bool first = true;
  for (const Row& row : report.rows) {
    out += first ? "\n" : ",\n";
    first = false;
    out += fmt::format("{{\"samples\":{},\"percent\":{:.4f},\"percent_low\":{:.4f},\"percent_high\":{:.4f}",
                       row.samples, row.percent, row.interval.low, row.interval.high);
    if (report.view != View::object) out += ",\"function\":\"" + json_escape(row.function) + "\"";
    out += ",\"object\":\"" + json_escape(row.object) + "\",\"object_path\":\"" + json_escape(row.object_path) + "\"";
    if (report.view == View::line)
      out += ",\"file\":\"" + json_escape(row.file) + "\",\"line\":" + std::to_string(row.line);
    if (report.view == View::address)
      out += fmt::format(",\"address\":\"{:#x}\",\"instruction\":\"{}\"", row.address, json_escape(row.instruction));
    out += "}";
  }
  out += fmt::format("\n],\"rows_total\":{},\"samples_shown\":{}}}\n", report.rows_before_filter,
                     report.samples_shown);
  return out;
}

namespace {

// The samples as named stacks, for the folded and tree formats: every
// distinct name once, every distinct named caller chain once, and the
// count of each (chain, leaf name) after --focus (a stack with a frame
// that matches; --min-percent and --top are the callers' to apply).
struct NamedStacks {
  std::vector<std::string> names;
  std::vector<const std::vector<uint32_t>*> chains;  // root first, without the leaf
  std::map<std::vector<uint32_t>, uint32_t> chain_ids;
  std::vector<std::pair<std::pair<uint32_t, uint32_t>, uint64_t>> lines;  // ((chain, leaf name), count)
};

NamedStacks name_stacks(const Report& report, const SymbolizedProfile& symbolized, Symbolizer& symbolizer) {
  NamedStacks named;
  std::vector<std::string>& names = named.names;
  const format::Profile& profile = *symbolized.profile;
  const ReportOptions& options = report.options;
  // Each distinct address is named once; names are numbered so that a
  // stack is a short vector of numbers until it is printed.
  std::vector<const format::Mapping*> mappings;
  for (const format::Mapping& m : profile.mappings) mappings.push_back(&m);
  std::sort(mappings.begin(), mappings.end(),
            [](const format::Mapping* a, const format::Mapping* b) { return a->start < b->start; });
  std::vector<bool> focused;
  std::unordered_map<std::string, uint32_t> name_ids;
  std::unordered_map<uint64_t, uint32_t> address_names;
  auto name_of = [&](uint64_t address) -> uint32_t {
    auto known = address_names.find(address);
    if (known != address_names.end()) return known->second;
    auto it = std::upper_bound(mappings.begin(), mappings.end(), address,
                               [](uint64_t a, const format::Mapping* m) { return a < m->start; });
    const format::Mapping* mapping = it != mappings.begin() && (*(it - 1))->contains(address) ? *(it - 1) : nullptr;
    if (!mapping) mapping = profile.mapping_for(address);  // overlapping mappings
    const Symbol symbol = symbolizer.symbolize(mapping, address, profile.frames_for(address));
    std::string name = report.view == View::object ? object_basename(symbol.object)
                       : options.folded_objects    ? object_basename(symbol.object) + "`" + symbol.function
                                                   : symbol.function;
    // ';' separates frames and the last space the count: a ';' inside a
    // name (C++ templates may hold one) becomes ':'; spaces may stay.
    std::replace(name.begin(), name.end(), ';', ':');
    std::replace(name.begin(), name.end(), '\n', ' ');
    auto [id, inserted] = name_ids.try_emplace(name, static_cast<uint32_t>(names.size()));
    if (inserted) {
      // As in the rows: the function (the object path in the object view).
      focused.push_back(options.focus &&
                        options.focus->found_in(report.view == View::object ? symbol.object : symbol.function));
      names.push_back(std::move(name));
    }
    address_names.emplace(address, id->second);
    return id->second;
  };
  const uint32_t truncated_root = name_ids.try_emplace(format::kTruncatedFrame, 0).first->second;
  names.push_back(format::kTruncatedFrame);
  focused.push_back(false);

  // Each caller chain is named once (chains of other addresses in the same
  // functions get the same named chain), then each (named chain, leaf name)
  // is one line: memory follows the distinct chains, not the samples.
  std::map<std::vector<uint32_t>, uint32_t>& named_chain_ids = named.chain_ids;
  std::vector<const std::vector<uint32_t>*>& named_chains = named.chains;
  std::vector<uint32_t> chain_of(profile.stacks.size() + 1, UINT32_MAX);
  std::vector<uint32_t> frames;
  auto named_chain = [&](uint32_t stack) {
    uint32_t& id = chain_of[stack < chain_of.size() ? stack : 0];
    if (id != UINT32_MAX) return id;
    frames.clear();
    if (profile.stacks.truncated(stack)) frames.push_back(truncated_root);
    const auto callers = profile.stacks.callers(stack);
    for (auto caller = callers.rbegin(); caller != callers.rend(); ++caller) frames.push_back(name_of(*caller));
    auto [it, inserted] = named_chain_ids.try_emplace(frames, static_cast<uint32_t>(named_chains.size()));
    if (inserted) named_chains.push_back(&it->first);
    return id = it->second;
  };
  std::map<std::pair<uint32_t, uint32_t>, uint64_t> counts;  // (named chain, leaf name)
  for (const format::Sample& sample : profile.samples) {
    if (sample.count == 0) continue;
    format::saturating_add(counts[{named_chain(sample.stack), name_of(sample.address)}], sample.count);
  }

  for (const auto& [key, count] : counts) {
    if (options.focus && !focused[key.second] &&
        std::none_of(named_chains[key.first]->begin(), named_chains[key.first]->end(),
                     [&](uint32_t id) { return focused[id]; }))
      continue;
    named.lines.emplace_back(key, count);
  }
  return named;
}

double share(uint64_t count, uint64_t total) {
  return total ? 100.0 * static_cast<double>(count) / static_cast<double>(total) : 0;
}

}  // namespace

std::string render_folded(const Report& report, const SymbolizedProfile& symbolized, Symbolizer& symbolizer) {
  const NamedStacks named = name_stacks(report, symbolized, symbolizer);
  const std::vector<std::string>& names = named.names;
  const auto& named_chains = named.chains;
  const ReportOptions& options = report.options;
  std::vector<std::pair<std::pair<uint32_t, uint32_t>, uint64_t>> lines;
  for (const auto& line : named.lines)
    if (options.min_percent <= 0 || share(line.second, symbolized.total) >= options.min_percent) lines.push_back(line);
  // Hottest first; ties in the order the chains were first met (the
  // samples' order), so the output is deterministic.
  std::stable_sort(lines.begin(), lines.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  if (options.top && lines.size() > options.top) lines.resize(options.top);
  // The text is sized first: deep stacks make it the largest thing the
  // report holds, and a string grown by doubling would peak at twice it.
  size_t size = 0;
  for (const auto& [key, count] : lines) {
    for (uint32_t id : *named_chains[key.first]) size += names[id].size() + 1;
    size += names[key.second].size() + 22;
  }
  std::string out;
  out.reserve(size);
  for (const auto& [key, count] : lines) {
    for (uint32_t id : *named_chains[key.first]) {
      out += names[id];
      out += ';';
    }
    out += names[key.second];
    out += fmt::format(" {}\n", count);
  }
  return out;
}


std::string render_tree(const Report& report, const SymbolizedProfile& symbolized, Symbolizer& symbolizer) {
  const NamedStacks named = name_stacks(report, symbolized, symbolizer);
  const ReportOptions& options = report.options;
  // The stacks merged from the root: a node per distinct path of names.
  struct Node {
    uint32_t name;
    uint64_t total = 0, self = 0;
    std::map<uint32_t, size_t> children;  // name -> node
  };
  std::vector<Node> nodes(1, Node{UINT32_MAX, 0, 0, {}});
  for (const auto& [key, count] : named.lines) {
    size_t at = 0;
    auto step = [&](uint32_t name) {
      auto [it, inserted] = nodes[at].children.try_emplace(name, nodes.size());
      if (inserted) nodes.push_back(Node{name, 0, 0, {}});
      at = it->second;
      format::saturating_add(nodes[at].total, count);
    };
    for (uint32_t name : *named.chains[key.first]) step(name);
    step(key.second);
    format::saturating_add(nodes[at].self, count);
  }
  std::string out = fmt::format("profil report by call tree: {}\n", describe_summary(report.summary));
  if (!report.summary.files.empty()) {
    out += "files:";
    for (const std::string& f : report.summary.files) out += " " + f;
    out += "\n";
  }
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
    const double percent = share(nodes[node].total, symbolized.total);
    if (options.min_percent > 0 && percent < options.min_percent) continue;  // and its callees
    out += fmt::format("{:>10}  {:>6.2f}%  {:>10}  {}{}\n", nodes[node].total, percent, nodes[node].self,
                       std::string(2 * std::min<size_t>(depth, 64), ' '), named.names[nodes[node].name]);
    push_children(node, depth + 1);
  }
  return out;
}

std::string render_diff_text(const Diff& diff, const std::string& base_name, const std::string& new_name,
                             bool colour) {
  const char* bold = colour ? "\x1b[1m" : "";
  const char* reset = colour ? "\x1b[0m" : "";
  std::string out = fmt::format("{}profil diff{}: share of each function, base -> new\n", bold, reset);
  out += fmt::format("base: {}: {}\n", base_name, describe_summary(diff.base));
  out += fmt::format("new:  {}: {}\n\n", new_name, describe_summary(diff.changed));
  size_t function_width = 8;
  for (const DiffRow& r : diff.rows) function_width = std::min<size_t>(std::max(function_width, width_of(r.function)), 72);
  out += fmt::format("{}{:>9}  {:>7}  {:>8}  {:>8}  {:>7}  {:>8}  {}  {}{}\n", bold, "change", "±95%", "base", "new",
                     "z", "p", pad_right("function", function_width), "object", reset);
  for (const DiffRow& r : diff.rows) {
    const char* tint = "";
    if (colour && std::fabs(r.z) >= 1.96) tint = r.z > 0 ? "\x1b[31m" : "\x1b[32m";
    out += fmt::format("{}{:>+8.2f}%  {:>7.2f}  {:>7.2f}%  {:>7.2f}%  {:>+7.2f}  {:>8.2g}  {}  {}{}\n", tint, r.delta,
                       r.delta_error, r.base_percent, r.new_percent, r.z, r.p_value,
                       pad_right(r.function, function_width), r.object, *tint ? reset : "");
  }
  out += "\nchange in percentage points of all samples; z: two-proportion z test (|z| >= 1.96: significant at 5 %)\n";
  return out;
}

std::string render_diff_csv(const Diff& diff) {
  std::string out = "function,object,base_samples,new_samples,base_percent,new_percent,delta,delta_error,z,p_value\n";
  for (const DiffRow& r : diff.rows)
    out += fmt::format("{},{},{},{},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},{:.6g}\n", csv_field(r.function),
                       csv_field(r.object), r.base_samples, r.new_samples, r.base_percent, r.new_percent, r.delta,
                       r.delta_error, r.z, r.p_value);
  return out;
}

std::string render_diff_json(const Diff& diff) {
  std::string out = fmt::format("{{\"schema\":\"profil-diff/1\",\"base\":{},\"new\":{},\"rows\":[",
                                json_summary(diff.base), json_summary(diff.changed));
  bool first = true;
  for (const DiffRow& r : diff.rows) {
    out += first ? "\n" : ",\n";
    first = false;
    out += fmt::format(
        "{{\"function\":\"{}\",\"object\":\"{}\",\"base_samples\":{},\"new_samples\":{},\"base_percent\":{:.4f},"
        "\"new_percent\":{:.4f},\"delta\":{:.4f},\"delta_error\":{:.4f},\"z\":{:.4f},\"p_value\":{:.6g}}}",
        json_escape(r.function), json_escape(r.object), r.base_samples, r.new_samples, r.base_percent,
        r.new_percent, r.delta, r.delta_error, r.z, r.p_value);
  }
  return out + "\n]}\n";
}

}  // namespace profiling::report
