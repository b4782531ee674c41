// The HTML report: one file, inline CSS, inline SVG charts, the flame graph
// (flame_graph.h: d3-flame-graph, compiled in) and a few lines of script for
// sorting; it fetches nothing, so it opens offline and can be attached to a
// bug report.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "format/file_io.h"
#include "report/diff.h"
#include "report/flame_graph.h"
#include "report/flame_chart_page.h"
#include "report/flame_graph_page.h"
#include "report/render.h"

namespace profiling::report {
namespace {

std::string escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string shorten(const std::string& text, size_t max) {
  return text.size() <= max ? text : text.substr(0, max - 1) + "\u2026";
}

constexpr const char* kStyle = R"(
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;background:#fff}
h1{font-size:1.4em;margin:0 0 .3em} h2{font-size:1.15em;margin:1.6em 0 .4em}
.summary{background:#f4f6f8;border:1px solid #dde;padding:.6em 1em;border-radius:6px}
table{border-collapse:collapse;font-variant-numeric:tabular-nums}
th,td{padding:2px 8px;border-bottom:1px solid #eee;text-align:left;vertical-align:top}
th{background:#eef;cursor:pointer;user-select:none;position:sticky;top:0}
th.sorted-asc::after{content:" \25b2"} th.sorted-desc::after{content:" \25bc"}
td.num{text-align:right} td.fn{font-family:ui-monospace,monospace;word-break:break-all}
td.obj{white-space:nowrap}
tr:hover td{background:#fafae0}
.bar{fill:#d9534f} .whisker{stroke:#333;stroke-width:1.2} .axis{stroke:#999}
.col{fill:#4a78c2} .col:hover{fill:#d9534f}
svg text{font:12px system-ui,sans-serif} .mono{font-family:ui-monospace,monospace}
pre.src{margin:0;font:12px/1.35 ui-monospace,monospace}
.src .hot{background:#ffe0e0} .cnt{color:#b00;display:inline-block;width:7em;text-align:right;margin-right:1em}
.lineno{color:#888;display:inline-block;width:5em;text-align:right;margin-right:1em}
details{margin:.4em 0} summary{cursor:pointer}
)";

constexpr const char* kScript = R"(
(function(){
  var table=document.getElementById('profile-table');
  if(!table) return;
  table.setAttribute('data-sortable','ready');
  var heads=table.tHead.rows[0].cells;
  for(var i=0;i<heads.length;i++)(function(col){
    heads[col].addEventListener('click',function(){
      var asc=!this.classList.contains('sorted-asc');
      for(var j=0;j<heads.length;j++) heads[j].classList.remove('sorted-asc','sorted-desc');
      this.classList.add(asc?'sorted-asc':'sorted-desc');
      var body=table.tBodies[0], rows=Array.prototype.slice.call(body.rows);
      rows.sort(function(a,b){
        var x=a.cells[col].getAttribute('data-v')||a.cells[col].textContent;
        var y=b.cells[col].getAttribute('data-v')||b.cells[col].textContent;
        var nx=parseFloat(x), ny=parseFloat(y);
        var c=(!isNaN(nx)&&!isNaN(ny))?nx-ny:x.localeCompare(y);
        return asc?c:-c;
      });
      rows.forEach(function(r){body.appendChild(r);});
    });
  })(i);
})();
)";

std::string bar_chart(const Report& report) {
  size_t n = std::min<size_t>(report.rows.size(), 20);
  const int label_width = 360, bar_width = 480, row_height = 22, top = 8;
  int height = top + static_cast<int>(n) * row_height + 24;
  double max_percent = 0;
  for (size_t i = 0; i < n; ++i) max_percent = std::max(max_percent, report.rows[i].interval.high);
  if (max_percent <= 0) max_percent = 1;
  std::string svg = fmt::format(
      "<svg id=\"chart-hottest\" class=\"chart\" role=\"img\" aria-label=\"hottest rows\" width=\"{}\" height=\"{}\" "
      "xmlns=\"http://www.w3.org/2000/svg\">\n",
      label_width + bar_width + 90, height);
  for (size_t i = 0; i < n; ++i) {
    const Row& row = report.rows[i];
    std::string label = report.view == View::object ? row.object
                        : report.view == View::line ? fmt::format("{}:{}", object_basename(row.file), row.line)
                                                    : row.function;
    int y = top + static_cast<int>(i) * row_height;
    double w = bar_width * row.percent / max_percent;
    double lo = label_width + bar_width * row.interval.low / max_percent;
    double hi = label_width + bar_width * row.interval.high / max_percent;
    svg += fmt::format(
        "<g><title>{} ({}): {} samples, {:.2f}% (95% {:.2f}-{:.2f}%)</title>"
        "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" class=\"mono\">{}</text>"
        "<rect class=\"bar\" x=\"{}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\"/>"
        "<line class=\"whisker\" x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{}\" y2=\"{}\"/>"
        "<text x=\"{:.1f}\" y=\"{}\">{:.1f}%</text></g>\n",
        escape(label), escape(row.object), row.samples, row.percent, row.interval.low, row.interval.high,
        label_width - 6, y + 15, escape(shorten(label, 48)), label_width, y + 3, w, row_height - 6, lo, hi,
        y + row_height / 2, y + row_height / 2, std::max(hi, label_width + w) + 6, y + 15, row.percent);
  }
  svg += fmt::format("<line class=\"axis\" x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>\n", label_width, label_width, top,
                     height - 20);
  return svg + "</svg>\n";
}

// Samples over each object's address space: columns of link-time address
// ranges, each titled with the hottest function it holds.
std::string address_space_charts(const SymbolizedProfile& symbolized) {
  struct ObjectSamples {
    uint64_t total = 0;
    std::vector<const SymbolizedSample*> samples;
  };
  std::map<std::string, ObjectSamples> objects;
  for (const SymbolizedSample& s : symbolized.samples) {
    if (!s.mapping) continue;
    auto& o = objects[s.symbol.object];
    format::saturating_add(o.total, s.count);
    o.samples.push_back(&s);
  }
  std::vector<std::pair<std::string, ObjectSamples*>> order;
  for (auto& [name, o] : objects) order.emplace_back(name, &o);
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.second->total > b.second->total; });
  if (order.size() > 8) order.resize(8);
  std::string out = "<div id=\"chart-address-space\">\n";
  const int columns = 120, width = 840, height = 140;
  for (const auto& [name, o] : order) {
    auto address_of = [](const SymbolizedSample* s) {
      return s->symbol.file_address ? s->symbol.file_address : s->address - s->mapping->start;
    };
    uint64_t low = UINT64_MAX, high = 0;
    for (const SymbolizedSample* s : o->samples) {
      low = std::min(low, address_of(s));
      high = std::max(high, address_of(s));
    }
    // The whole executable part of the object when its program headers are
    // readable, so that the chart shows where in the object the time goes.
    auto segments = symbolized.segments.find(o->samples.front()->mapping);
    if (o->samples.front()->symbol.file_address && segments != symbolized.segments.end()) {
      for (const LoadSegment& segment : segments->second) {
        if (!segment.executable) continue;
        low = std::min(low, segment.vaddr);
        high = std::max(high, segment.vaddr + segment.mem_size - 1);
      }
    }
    uint64_t span = high - low + 1;
    std::vector<uint64_t> counts(columns);
    std::vector<std::map<std::string, uint64_t>> functions(columns);
    for (const SymbolizedSample* s : o->samples) {
      size_t c = static_cast<size_t>((address_of(s) - low) * columns / span);
      format::saturating_add(counts[c], s->count);
      format::saturating_add(functions[c][s->symbol.function], s->count);
    }
    uint64_t max_count = *std::max_element(counts.begin(), counts.end());
    out += fmt::format("<h3 class=\"mono\">{} <small>({} samples, {:#x}-{:#x})</small></h3>\n",
                       escape(object_basename(name)), o->total, low, high);
    out += fmt::format(
        "<svg class=\"chart address-space\" width=\"{}\" height=\"{}\" xmlns=\"http://www.w3.org/2000/svg\">\n",
        width + 20, height + 20);
    double column_width = static_cast<double>(width) / columns;
    for (int c = 0; c < columns; ++c) {
      if (!counts[c]) continue;
      double h = std::max(1.0, static_cast<double>(height) * static_cast<double>(counts[c]) / static_cast<double>(max_count));
      auto hottest = std::max_element(functions[c].begin(), functions[c].end(),
                                      [](const auto& a, const auto& b) { return a.second < b.second; });
      out += fmt::format(
          "<rect class=\"col\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\"><title>{:#x}: {} samples, "
          "mostly {}</title></rect>\n",
          10 + c * column_width, height - h, std::max(1.0, column_width - 1), h, low + c * span / columns, counts[c],
          escape(hottest->first));
    }
    // The three hottest columns are labelled with their hottest function,
    // each function once. A label goes where its column's bar ends, else
    // lower, a line at a time, until it overlaps no label placed before it
    // (hotter columns first); one that finds no room is left out: adjacent
    // hot columns, as a small program's functions make, drew their labels
    // over each other.
    std::vector<int> hottest_columns;
    for (int c = 0; c < columns; ++c)
      if (counts[c]) hottest_columns.push_back(c);
    std::stable_sort(hottest_columns.begin(), hottest_columns.end(),
                     [&counts](int a, int b) { return counts[a] > counts[b]; });
    struct Box {
      double left, right, top, bottom;
      bool overlaps(const Box& other) const {
        return left < other.right && other.left < right && top < other.bottom && other.top < bottom;
      }
    };
    std::vector<Box> placed;
    std::set<std::string> labelled;
    // svg text is 12px; a monospace glyph is about 0.6 em wide.
    constexpr double kGlyphWidth = 7.2, kLineHeight = 14;
    for (int c : hottest_columns) {
      if (placed.size() == 3) break;
      auto hottest = std::max_element(functions[c].begin(), functions[c].end(),
                                      [](const auto& a, const auto& b) { return a.second < b.second; });
      if (!labelled.insert(hottest->first).second) continue;
      const std::string text = shorten(hottest->first, 40);
      const double text_width = kGlyphWidth * static_cast<double>(width_of(text)) + 4;
      double h = static_cast<double>(height) * static_cast<double>(counts[c]) / static_cast<double>(max_count);
      // A label reads from its column to the right, or ends at it where it
      // would run past the chart's end.
      const bool leftwards = 14 + c * column_width + text_width > width + 10;
      const double x = leftwards ? 6 + c * column_width : 14 + c * column_width;
      const double left = leftwards ? x - text_width : x, right = leftwards ? x : x + text_width;
      for (double baseline = std::max(12.0, height - h + 12); baseline <= height - 2; baseline += kLineHeight) {
        const Box box{left, right, baseline - 11, baseline + 3};
        if (std::any_of(placed.begin(), placed.end(), [&box](const Box& other) { return box.overlaps(other); }))
          continue;
        placed.push_back(box);
        out += fmt::format("<text class=\"mono label\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"{}\">{}</text>\n", x,
                           baseline, leftwards ? "end" : "start", escape(text));
        break;
      }
    }
    out += fmt::format("<line class=\"axis\" x1=\"10\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>\n", width + 10, height, height);
    out += fmt::format("<text x=\"10\" y=\"{}\">{:#x}</text><text x=\"{}\" y=\"{}\" text-anchor=\"end\">{:#x}</text>\n",
                       height + 15, low, width + 10, height + 15, high);
    out += "</svg>\n";
  }
  return out + "</div>\n";
}

// The source file's lines; none when it is not a regular file of at most
// 16 MiB (the profile names the path: it may be a FIFO or /dev/zero).
std::vector<std::string> read_lines(const std::string& path) {
  std::vector<std::string> lines;
  std::string bytes, problem;
  if (!format::try_read_file(path, &bytes, &problem, size_t{16} << 20)) return lines;
  size_t start = 0;
  while (start < bytes.size()) {
    size_t end = bytes.find('\n', start);
    if (end == std::string::npos) end = bytes.size();
    lines.push_back(bytes.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

// The hottest functions' sampled source lines, with the source text around
// them when the file is readable here.
std::string source_sections(const SymbolizedProfile& symbolized) {
  struct FunctionLines {
    uint64_t total = 0;
    std::string object;
    std::map<std::pair<std::string, int>, uint64_t> lines;
  };
  std::map<std::string, FunctionLines> functions;
  for (const SymbolizedSample& s : symbolized.samples) {
    if (!s.symbol.known && !s.symbol.from_profile) continue;
    auto& f = functions[s.symbol.function + '\0' + s.symbol.object];
    format::saturating_add(f.total, s.count);
    f.object = s.symbol.object;
    // The model's lines: of the hottest functions' samples (ModelNeeds::sources).
    format::saturating_add(f.lines[{s.line.file, s.line.line}], s.count);
  }
  std::vector<std::pair<std::string, FunctionLines*>> order;
  for (const std::string& key : hottest_functions(symbolized, kSourceFunctions))
    order.emplace_back(key.substr(0, key.find('\0')), &functions[key]);
  std::string out = "<div id=\"source-lines\">\n";
  std::map<std::string, std::vector<std::string>> sources;
  double n = static_cast<double>(std::max<uint64_t>(symbolized.total, 1));
  for (const auto& [function, f] : order) {
    out += fmt::format("<details open><summary class=\"mono\">{} <small>({}, {} samples, {:.2f}%)</small></summary>\n",
                       escape(function), escape(object_basename(f->object)), f->total, 100.0 * f->total / n);
    // Lines grouped per file; each file shows its sampled lines +-2.
    std::map<std::string, std::map<int, uint64_t>> by_file;
    for (const auto& [where, count] : f->lines) format::saturating_add(by_file[where.first][where.second], count);
    out += "<table class=\"lines\"><thead><tr><th>line</th><th>samples</th><th>percent</th></tr></thead><tbody>\n";
    for (const auto& [file, lines] : by_file)
      for (const auto& [line, count] : lines)
        out += fmt::format("<tr><td class=\"mono\">{}:{}</td><td class=\"num\">{}</td><td class=\"num\">{:.2f}%</td></tr>\n",
                           escape(file.empty() ? "??" : file), line ? std::to_string(line) : "?", count,
                           100.0 * count / n);
    out += "</tbody></table>\n";
    for (const auto& [file, lines] : by_file) {
      if (file.empty()) continue;
      auto it = sources.find(file);
      if (it == sources.end()) it = sources.emplace(file, read_lines(file)).first;
      const auto& text = it->second;
      if (text.empty()) continue;
      std::set<int> shown;
      for (const auto& [line, count] : lines)
        for (int l = line - 2; l <= line + 2; ++l)
          if (l >= 1 && l <= static_cast<int>(text.size())) shown.insert(l);
      if (shown.size() > 80) continue;
      out += "<pre class=\"src\">";
      int previous = 0;
      for (int l : shown) {
        if (previous && l != previous + 1) out += "<span class=\"lineno\">\u22ee</span>\n";
        previous = l;
        auto hit = lines.find(l);
        std::string count = hit != lines.end() ? std::to_string(hit->second) : "";
        out += fmt::format("<span class=\"{}\"><span class=\"cnt\">{}</span><span class=\"lineno\">{}</span>{}</span>\n",
                           hit != lines.end() ? "hot" : "", count, l, escape(text[l - 1]));
      }
      out += "</pre>\n";
    }
    out += "</details>\n";
  }
  return out + "</div>\n";
}

// A summary's samples, rate, clock, program and files, as paragraphs.
std::string summary_paragraphs(const Summary& s) {
  std::string out = fmt::format("<p><b>{}</b> samples", s.samples);
  if (!s.event.empty())
    out = fmt::format("<p><b>{}</b> {} samples, one every {}", s.samples, escape(s.event), s.event_period);
  if (s.period_ns)
    // The wall clock samples blocked time too (as render.cc's text header says).
    out += fmt::format(" at <b>{:.6g} Hz</b> ({} ns each): <b>{:.3f} s</b> of {} time", s.rate_hz, s.period_ns, s.cpu_seconds,
                       s.clock == "wall" ? "wall" : "CPU");
  if (!s.clock.empty() && s.event.empty()) out += fmt::format(", {} clock", escape(s.clock));
  if (s.wall_seconds > 0) out += fmt::format(", over {:.3f} s", s.wall_seconds);
  if (s.dropped) out += fmt::format(", {} dropped", s.dropped);
  out += fmt::format(", {} objects.</p>\n", s.objects);
  if (s.own_samples)
    out += fmt::format("<p id=\"profil-own\">{} samples ({:.2f}%) in profil's own code (its handler, its dump) are "
                       "left out.</p>\n",
                       s.own_samples, own_percent(s));
  if (!s.program.empty()) out += "<p>program: <code>" + escape(s.program) + "</code></p>\n";
  if (!s.files.empty()) {
    out += "<p>files:";
    for (const std::string& f : s.files) out += " <code>" + escape(f) + "</code>";
    out += "</p>\n";
  }
  return out;
}

}  // namespace

std::string render_html(const Report& report, const SymbolizedProfile& symbolized) {
  const Summary& s = report.summary;
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  out += fmt::format("<title>profil report: {}</title>\n", escape(s.program.empty() ? "profile" : object_basename(s.program)));
  out += "<style>" + std::string(kStyle) + "</style></head><body>\n";
  out += fmt::format("<h1>profil report by {}</h1>\n<div id=\"summary\" class=\"summary\">\n", view_name(report.view));
  out += summary_paragraphs(s);
  out += fmt::format("<p>Each share carries its 95 % Wilson score interval: the samples are a random draw from the "
                     "program's {} time.</p>\n</div>\n", s.clock == "wall" ? "wall" : "CPU");

  // The flame graph first: the one picture of where the time went, whole
  // stacks; the flat views follow.
  out += flame_graph_section(build_flame_graph(report), symbolized.total,
                             symbolized.total_observations);
  // Each thread over time (issue 33), drawn by the library the flame
  // graph put on the page.
  if (report.timeline) out += flame_chart_section(*report.timeline);

  out += "<h2>Hottest</h2>\n" + bar_chart(report);

  out += "<h2>All rows</h2>\n<table id=\"profile-table\" class=\"sortable\"><thead><tr>"
         "<th>samples</th><th>percent</th><th>95% low</th><th>95% high</th>";
  // Cumulative: the samples whose stack holds the row (it and all it called).
  // An instruction has no callees: the address view has no such column.
  const bool cumulative = report.view != View::address;
  if (cumulative) out += "<th>total</th><th>total %</th>";
  if (report.view == View::address) out += "<th>address</th>";
  if (report.view == View::line) out += "<th>location</th>";
  // The thread and process views' rows are labelled "name id" in that column.
  if (report.view != View::object)
    out += fmt::format("<th>{}</th>", report.view == View::thread || report.view == View::process
                                          ? view_name(report.view)
                                          : "function");
  if (report.view == View::address) out += "<th>instruction</th>";
  out += "<th>object</th></tr></thead><tbody>\n";
  for (const Row& row : report.rows) {
    out += fmt::format(
        "<tr><td class=\"num\">{}</td><td class=\"num\" data-v=\"{:.6f}\">{:.2f}%</td><td class=\"num\" "
        "data-v=\"{:.6f}\">{:.2f}%</td><td class=\"num\" data-v=\"{:.6f}\">{:.2f}%</td>",
        row.samples, row.percent, row.percent, row.interval.low, row.interval.low, row.interval.high, row.interval.high);
    if (cumulative)
      out += fmt::format("<td class=\"num\">{}</td><td class=\"num\" data-v=\"{:.6f}\">{:.2f}%</td>",
                         row.cumulative_samples, row.cumulative_percent, row.cumulative_percent);
    if (report.view == View::address) out += fmt::format("<td class=\"fn\">{:#x}</td>", row.address);
    if (report.view == View::line)
      out += fmt::format("<td class=\"fn\">{}:{}</td>", escape(row.file.empty() ? "??" : row.file), row.line);
    if (report.view != View::object) out += "<td class=\"fn\">" + escape(row.function) + "</td>";
    if (report.view == View::address) out += "<td class=\"fn\">" + escape(row.instruction) + "</td>";
    out += "<td class=\"fn obj\" title=\"" + escape(row.object_path) + "\">" + escape(row.object) + "</td></tr>\n";
  }
  out += "</tbody></table>\n";
  if (report.rows.size() < report.rows_before_filter)
    out += fmt::format("<p>{} of {} rows shown.</p>\n", report.rows.size(), report.rows_before_filter);

  out += "<h2>Samples over each object's address space</h2>\n" + address_space_charts(symbolized);
  out += "<h2>Source lines of the hottest functions</h2>\n" + source_sections(symbolized);
  out += "<script>" + std::string(kScript) + "</script>\n</body></html>\n";
  return out;
}

std::string render_diff_html(const Diff& diff, const std::string& base_name, const std::string& new_name) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  const std::string program = diff.changed.program.empty() ? "profiles" : object_basename(diff.changed.program);
  out += fmt::format("<title>profil diff: {}</title>\n", escape(program));
  out += "<style>" + std::string(kStyle) + "</style></head><body>\n<h1>profil diff</h1>\n";
  out += "<div id=\"summary\" class=\"summary\">\n<p>base: <code>" + escape(base_name) + "</code></p>\n" +
         summary_paragraphs(diff.base) + "<p>new: <code>" + escape(new_name) + "</code></p>\n" +
         summary_paragraphs(diff.changed) + "</div>\n";
  if (diff.base_stacks && diff.new_stacks) {
    const FlameGraph graph = differential_flame_graph(*diff.base_stacks, *diff.new_stacks, diff);
    out += flame_graph_section(graph, graph.samples(), graph.observations());
  }
  // The rows as profil diff's text: self seconds and their test, share and
  // its test, total share and its test; q: adjusted across the rows.
  out += "<h2>Each function</h2>\n<table id=\"profile-table\" class=\"sortable\"><thead><tr>"
         "<th>base</th><th>new</th><th>change</th><th>change s</th><th>q (seconds)</th><th>share change</th>"
         "<th>q (share)</th><th>total</th><th>total change</th><th>q (total)</th><th>function</th><th>object</th>"
         "</tr></thead><tbody>\n";
  auto verdict = [](double q, bool significant) {
    return fmt::format("<td class=\"num\" data-v=\"{:.6g}\"{}>{:.2g}</td>", q,
                       significant ? " style=\"font-weight:bold\"" : "", q);
  };
  for (const DiffRow& r : diff.rows) {
    // Red slower, blue faster (diff_direction: by the seconds).
    const int direction = diff_direction(diff, r);
    const char* tint = direction > 0 ? " style=\"color:#b00\"" : direction < 0 ? " style=\"color:#00a\"" : "";
    out += fmt::format(
        "<tr{}><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{:+}</td>"
        "<td class=\"num\" data-v=\"{:.6f}\">{:+.3f}</td>{}<td class=\"num\" data-v=\"{:.6f}\">{:+.2f}%</td>{}"
        "<td class=\"num\" data-v=\"{:.6f}\">{:.2f}%</td><td class=\"num\" data-v=\"{:.6f}\">{:+.2f}%</td>{}"
        "<td class=\"fn\">{}</td><td class=\"fn obj\">{}</td></tr>\n",
        tint, r.base_samples, r.new_samples, r.delta_samples, r.delta_seconds, r.delta_seconds,
        verdict(r.rate_q_value, r.rate_significant), r.delta, r.delta, verdict(r.q_value, r.significant),
        r.new_cumulative_percent, r.new_cumulative_percent, r.cumulative_delta, r.cumulative_delta,
        verdict(r.cumulative_q_value, r.cumulative_significant), escape(r.function), escape(r.object));
  }
  out += "</tbody></table>\n";
  out += fmt::format(
      "<p>q: each test's p value adjusted for the false discovery rate across the {} rows (Benjamini-Hochberg), "
      "bold below {}: seconds, did the function's self time {} change (the conditional binomial test of two Poisson "
      "counts); share, did its share of the samples change (Fisher's exact test up to {} samples, z test above).</p>\n",
      diff.rows.size(), kDiffLevel, diff.per_wall_second ? "per wall second" : "per run", kExactTestLimit);
  out += "<script>" + std::string(kScript) + "</script>\n</body></html>\n";
  return out;
}

}  // namespace profiling::report
