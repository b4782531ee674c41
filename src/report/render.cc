#include "report/render.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "report/stack_views.h"

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


std::string pad_right(const std::string& text, size_t width) {
  size_t w = width_of(text);
  return w >= width ? text : text + std::string(width - w, ' ');
}
std::string pad_left(const std::string& text, size_t width) {
  size_t w = width_of(text);
  return w >= width ? text : std::string(width - w, ' ') + text;
}

}  // namespace

size_t width_of(const std::string& text) {
  size_t n = 0;
  for (unsigned char c : text)
    if ((c & 0xc0) != 0x80) ++n;
  return n;
}

std::string describe_summary(const Summary& s) {
  std::string text = fmt::format("{} samples", s.samples);
  // An event's samples are counted, never turned into seconds (issue 33).
  if (!s.event.empty()) text = fmt::format("{} {} samples, one every {}", s.samples, s.event, s.event_period);
  if (s.period_ns) {
    // The wall clock samples blocked time too: its seconds are not CPU time.
    text += fmt::format(" at {:.6g} Hz ({} ns each) = {:.3f} s of {} time", s.rate_hz, s.period_ns, s.cpu_seconds,
                        s.clock == "wall" ? "wall" : "CPU");
  }
  if (!s.clock.empty() && s.event.empty()) text += fmt::format(", {} clock", s.clock);
  // Said only where they differ: a signal that stood for several periods
  // (above the kernel tick) widens every interval (issue 22).
  if (s.observations != 0 && s.observations != s.samples)
    text += fmt::format(" (in {} signals or records: the intervals' draws)", s.observations);
  if (s.wall_seconds > 0) text += fmt::format(", over {:.3f} s", s.wall_seconds);
  if (s.dropped) text += fmt::format(", {} dropped", s.dropped);
  text += fmt::format(", {} object{}", s.objects, s.objects == 1 ? "" : "s");
  if (s.own_samples)
    text += fmt::format("; {} samples ({:.2f}%) in profil's own code (its handler, its dump) are left out",
                        s.own_samples, own_percent(s));
  return text;
}

std::string files_line(const Summary& summary) {
  if (summary.files.empty()) return "";
  std::string out = "files:";
  for (const std::string& f : summary.files) out += " " + f;
  return out + "\n";
}

std::string render_text(const Report& report, bool colour) {
  const char* bold = colour ? "\x1b[1m" : "";
  const char* reset = colour ? "\x1b[0m" : "";
  std::vector<std::string> headers = {"samples", "percent", "95% interval", "total"};
  View view = report.view;
  const bool tasks = view == View::thread || view == View::process;
  if (view == View::address) headers.push_back("address");
  if (view == View::line) headers.push_back("location");
  if (view == View::thread) headers.insert(headers.end(), {"tid", "pid", "thread"});
  if (view == View::process) headers.insert(headers.end(), {"pid", "process"});
  if (view != View::object && !tasks) headers.push_back("function");
  if (view == View::address) headers.push_back("instruction");
  if (!tasks) headers.push_back("object");
  std::vector<std::vector<std::string>> cells;
  for (const Row& row : report.rows) {
    std::vector<std::string> line = {std::to_string(row.samples), percent_text(row.percent),
                                     interval_text(row.interval), percent_text(row.cumulative_percent)};
    if (tasks) {
      if (view == View::thread) line.push_back(row.tid ? std::to_string(row.tid) : "-");
      line.push_back(row.pid ? std::to_string(row.pid) : "-");
      line.push_back(row.task_name.empty() ? row.function : row.task_name);
      cells.push_back(std::move(line));
      continue;
    }
    if (view == View::address) line.push_back(fmt::format("{:#x}", row.address));
    if (view == View::line) line.push_back(location_text(row));
    // Full names are in CSV and JSON; a column shows what fits.
    if (view != View::object) line.push_back(shorten_name(row.function, kNameColumn));
    if (view == View::address) line.push_back(row.instruction);
    line.push_back(row.object);
    cells.push_back(std::move(line));
  }
  std::vector<size_t> widths(headers.size());
  for (size_t c = 0; c < headers.size(); ++c) {
    widths[c] = width_of(headers[c]);
    for (const auto& line : cells) widths[c] = std::max(widths[c], width_of(line[c]));
    widths[c] = std::min<size_t>(widths[c], kNameColumn);  // a long name does not widen every row
  }
  std::string out = fmt::format("{}profil report by {}: {}{}\n", bold, view_name(view),
                                describe_summary(report.summary), reset);
  // Several files or processes: which programs they hold (issue 22: the
  // first file's program named a build's profile "ar", where cc1 had 98 %).
  const std::string& program = report.summary.program;
  if (!program.empty() && (report.summary.files.size() > 1 || program.find(" process") != std::string::npos))
    out += "programs: " + program + "\n";
  out += files_line(report.summary) + "\n";
  auto emit = [&](const std::vector<std::string>& line, bool header, double percent) {
    std::string text;
    for (size_t c = 0; c < line.size(); ++c) {
      bool numeric = c < 4;
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

// A row's observations (the draws behind its samples, issue 22): a number,
// or `unknown` ("" in CSV, null in JSON) when the files do not record them.
static std::string observations_field(const Report& report, const Row& row, const char* unknown) {
  return report.summary.observations != 0 ? std::to_string(row.observations) : unknown;
}

// The thread and process views' CSV: the numbers, then which task.
std::string render_task_csv(const Report& report) {
  const bool threads = report.view == View::thread;
  std::string out = threads ? "samples,percent,percent_low,percent_high,thread_id,thread_name,pid,observations\n"
                            : "samples,percent,percent_low,percent_high,pid,process,observations\n";
  for (const Row& row : report.rows) {
    out += fmt::format("{},{:.4f},{:.4f},{:.4f}", row.samples, row.percent, row.interval.low, row.interval.high);
    if (threads) out += fmt::format(",{},{}", row.tid, csv_field(row.task_name));
    out += fmt::format(",{}", row.pid);
    if (!threads) out += "," + csv_field(row.task_name);
    out += "," + observations_field(report, row, "") + "\n";
  }
  return out;
}

std::string render_csv(const Report& report) {
  View view = report.view;
  if (view == View::thread || view == View::process) return render_task_csv(report);
  std::string out = "samples,percent,percent_low,percent_high";
  if (view != View::object) out += ",function";
  out += ",object";
  if (view == View::line) out += ",file,line";
  if (view == View::address) out += ",address,instruction";
  out += ",cumulative_samples,cumulative_percent,observations\n";
  for (const Row& row : report.rows) {
    out += fmt::format("{},{:.4f},{:.4f},{:.4f}", row.samples, row.percent, row.interval.low, row.interval.high);
    if (view != View::object) out += "," + csv_field(row.function);
    out += "," + csv_field(row.object);
    if (view == View::line) out += "," + csv_field(row.file) + "," + std::to_string(row.line);
    if (view == View::address) out += fmt::format(",{:#x},{}", row.address, csv_field(row.instruction));
    out += fmt::format(",{},{:.4f},{}\n", row.cumulative_samples, row.cumulative_percent,
                       observations_field(report, row, ""));
  }
  return out;
}

std::string render_summary_json(const Summary& s) {
  std::string files;
  for (const std::string& f : s.files) files += (files.empty() ? "\"" : ",\"") + json_escape(f) + "\"";
  return fmt::format(
      "{{\"samples\":{},\"period_ns\":{},\"rate_hz\":{:.6g},\"cpu_seconds\":{:.6f},\"wall_seconds\":{:.6f},"
      "\"dropped\":{},\"clock\":\"{}\",\"program\":\"{}\",\"objects\":{},\"files\":[{}],"
      "\"profil_own_samples\":{},\"profil_own_percent\":{:.4f},\"observations\":{},"
      "\"sampled_seconds\":{:.6f},\"sampled_time\":\"{}\"{}}}",
      s.samples, s.period_ns, s.rate_hz, s.cpu_seconds, s.wall_seconds, s.dropped, json_escape(s.clock),
      json_escape(s.program), s.objects, files, s.own_samples, own_percent(s),
      s.observations != 0 ? std::to_string(s.observations) : "null", s.cpu_seconds,
      !s.event.empty() ? "none" : s.clock == "wall" ? "wall" : "cpu",
      // An event's profile (issue 33): what was counted, and how many each
      // sample stands for; no time was sampled.
      s.event.empty() ? "" : fmt::format(",\"event\":\"{}\",\"event_period\":{}", json_escape(s.event), s.event_period));
}

std::string render_json(const Report& report) {
  std::string out = fmt::format("{{\"schema\":\"profil-report/1\",\"view\":\"{}\",\"summary\":{},\"rows\":[",
                                view_name(report.view), render_summary_json(report.summary));
  bool first = true;
  for (const Row& row : report.rows) {
    out += first ? "\n" : ",\n";
    first = false;
    out += fmt::format("{{\"samples\":{},\"percent\":{:.4f},\"percent_low\":{:.4f},\"percent_high\":{:.4f}",
                       row.samples, row.percent, row.interval.low, row.interval.high);
    if (report.view == View::thread || report.view == View::process) {
      if (report.view == View::thread)
        out += fmt::format(",\"thread_id\":{},\"thread_name\":\"{}\"", row.tid, json_escape(row.task_name));
      out += fmt::format(",\"pid\":{}", row.pid);
      if (report.view == View::process) out += ",\"process\":\"" + json_escape(row.task_name) + "\"";
      out += fmt::format(",\"label\":\"{}\",\"observations\":{}}}", json_escape(row.function),
                         observations_field(report, row, "null"));
      continue;
    }
    if (report.view != View::object) out += ",\"function\":\"" + json_escape(row.function) + "\"";
    out += ",\"object\":\"" + json_escape(row.object) + "\",\"object_path\":\"" + json_escape(row.object_path) + "\"";
    if (report.view == View::line)
      out += ",\"file\":\"" + json_escape(row.file) + "\",\"line\":" + std::to_string(row.line);
    if (report.view == View::address)
      out += fmt::format(",\"address\":\"{:#x}\",\"instruction\":\"{}\"", row.address, json_escape(row.instruction));
    out += fmt::format(",\"cumulative_samples\":{},\"cumulative_percent\":{:.4f}", row.cumulative_samples,
                       row.cumulative_percent);
    if (report.view != View::object)
      out += ",\"raw_function\":\"" + json_escape(row.raw_function.empty() ? row.function : row.raw_function) + "\"";
    out += ",\"observations\":" + observations_field(report, row, "null") + "}";
  }
  out += fmt::format("\n],\"rows_total\":{},\"samples_shown\":{}}}\n", report.rows_before_filter,
                     report.samples_shown);
  return out;
}

std::string render_folded(const Report& report) { return folded_text(*report.stacks, report.options); }

std::string render_tree(const Report& report) {
  return tree_text(*report.stacks, report.options, report.summary);
}

std::string render_diff_text(const Diff& diff, const std::string& base_name, const std::string& new_name,
                             bool colour) {
  const char* bold = colour ? "\x1b[1m" : "";
  const char* reset = colour ? "\x1b[0m" : "";
  std::string out = fmt::format("{}profil diff{}: each function, base -> new\n", bold, reset);
  out += fmt::format("base: {}: {}\n", base_name, describe_summary(diff.base));
  out += fmt::format("new:  {}: {}\n\n", new_name, describe_summary(diff.changed));
  // Fits kDiffTextWidth columns (issue 35: every column of the CSV made
  // lines of 226): self samples, the seconds' change and its q, the change
  // of share and of total share, each with its q; the function and object
  // take what is left, shortened as pprof shortens names. The change in
  // samples, the share's interval and the verdicts' words are in the CSV
  // and JSON; a verdict here is its q ("*" below the level) and the row's
  // colour.
  constexpr size_t kFixed = 8 + 2 + 8 + 2 + 9 + 2 + 7 + 2 + 8 + 2 + 7 + 2 + 8 + 2 + 7 + 2;
  size_t object_width = 6, longest_name = 8;
  for (const DiffRow& r : diff.rows) {
    object_width = std::max(object_width, width_of(r.object));
    longest_name = std::max(longest_name, width_of(r.function));
  }
  // The object gets what the names leave, kDiffObjectColumn at least.
  const size_t object_room = kDiffTextWidth - kFixed - 2 - std::min(longest_name, kDiffTextWidth - kFixed - 2 -
                                                                                     kDiffObjectColumn);
  object_width = std::min(object_width, object_room);
  const size_t name_room = kDiffTextWidth - kFixed - 2 - object_width;
  size_t function_width = 8;
  for (const DiffRow& r : diff.rows)
    function_width = std::max(function_width, width_of(shorten_name(r.function, name_room)));
  out += fmt::format("{}{:>8}  {:>8}  {:>9}  {:>7}  {:>8}  {:>7}  {:>8}  {:>7}  {}  {}{}\n", bold, "base", "new",
                     "change s", "q", "share", "q", "total", "q", pad_right("function", function_width), "object",
                     reset);
  auto q_text = [](double q, bool significant) {
    return pad_left((q < 0.001 ? std::string("<0.001") : fmt::format("{:.2g}", q)) + (significant ? "*" : ""), 7);
  };
  for (const DiffRow& r : diff.rows) {
    const int direction = colour ? diff_direction(diff, r) : 0;
    const char* tint = direction > 0 ? "\x1b[31m" : direction < 0 ? "\x1b[32m" : "";
    out += fmt::format("{}{:>8}  {:>8}  {:>+9.3f}  {}  {:>+7.2f}%  {}  {:>+7.2f}%  {}  {}  {}{}\n", tint,
                       r.base_samples, r.new_samples, r.delta_seconds, q_text(r.rate_q_value, r.rate_significant),
                       r.delta, q_text(r.q_value, r.significant), r.cumulative_delta,
                       q_text(r.cumulative_q_value, r.cumulative_significant),
                       pad_right(shorten_name(r.function, name_room), function_width),
                       shorten_name(r.object, object_width), *tint ? reset : "");
  }
  out += fmt::format(
      "\nbase, new: self samples; change s: of self seconds (samples x period); share: change of the share of all\n"
      "samples, in percentage points; total: of the cumulative share (the function and its callees).\n"
      "q: each test's p value adjusted for the false discovery rate across the {} rows (Benjamini-Hochberg);\n"
      "*: q < {}, a change beyond the sampling noise. Seconds: did the self time {} change (the conditional\n"
      "binomial test of two Poisson counts); share, total: did the share change (Fisher's exact test up to {}\n"
      "samples, the two-proportion z test above). Every column, the interval of each change: --format csv or json.\n",
      diff.rows.size(), kDiffLevel, diff.per_wall_second ? "per wall second" : "per run", kExactTestLimit);
  return out;
}

// Whether a diff's tests were of draws (both profiles have observations;
// report.h DiffRow).
static bool diff_of_draws(const Diff& diff) { return diff.base.observations != 0 && diff.changed.observations != 0; }

std::string render_diff_csv(const Diff& diff) {
  std::string out =
      "function,object,base_samples,new_samples,base_percent,new_percent,delta,delta_error,z,p_value,base_seconds,"
      "new_seconds,delta_samples,delta_seconds,significant,base_cumulative_samples,new_cumulative_samples,"
      "base_cumulative_percent,new_cumulative_percent,cumulative_delta,cumulative_z,cumulative_p_value,"
      "cumulative_significant,q_value,cumulative_q_value,rate_z,rate_p_value,rate_q_value,rate_significant,"
      "base_observations,new_observations\n";
  const bool draws = diff_of_draws(diff);
  for (const DiffRow& r : diff.rows)
    out += fmt::format(
        "{},{},{},{},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},{:.6g},{:.6f},{:.6f},{},{:.6f},{},{},{},{:.4f},{:.4f},{:.4f},"
        "{:.4f},{:.6g},{},{:.6g},{:.6g},{:.4f},{:.6g},{:.6g},{},{},{}\n",
        csv_field(r.function), csv_field(r.object), r.base_samples, r.new_samples, r.base_percent, r.new_percent,
        r.delta, r.delta_error, r.z, r.p_value, r.base_seconds, r.new_seconds, r.delta_samples, r.delta_seconds,
        r.significant ? 1 : 0, r.base_cumulative, r.new_cumulative, r.base_cumulative_percent,
        r.new_cumulative_percent, r.cumulative_delta, r.cumulative_z, r.cumulative_p_value,
        r.cumulative_significant ? 1 : 0, r.q_value, r.cumulative_q_value, r.rate_z, r.rate_p_value, r.rate_q_value,
        r.rate_significant ? 1 : 0, draws ? std::to_string(r.base_observations) : "",
        draws ? std::to_string(r.new_observations) : "");
  return out;
}

std::string render_diff_json(const Diff& diff) {
  const bool draws = diff_of_draws(diff);
  std::string out = fmt::format("{{\"schema\":\"profil-diff/1\",\"base\":{},\"new\":{},\"rows\":[",
                                render_summary_json(diff.base), render_summary_json(diff.changed));
  bool first = true;
  for (const DiffRow& r : diff.rows) {
    out += first ? "\n" : ",\n";
    first = false;
    out += fmt::format(
        "{{\"function\":\"{}\",\"object\":\"{}\",\"base_samples\":{},\"new_samples\":{},\"base_percent\":{:.4f},"
        "\"new_percent\":{:.4f},\"delta\":{:.4f},\"delta_error\":{:.4f},\"z\":{:.4f},\"p_value\":{:.6g},"
        "\"base_seconds\":{:.6f},\"new_seconds\":{:.6f},\"delta_samples\":{},\"delta_seconds\":{:.6f},"
        "\"significant\":{},\"base_cumulative_samples\":{},\"new_cumulative_samples\":{},"
        "\"base_cumulative_percent\":{:.4f},\"new_cumulative_percent\":{:.4f},\"cumulative_delta\":{:.4f},"
        "\"cumulative_z\":{:.4f},\"cumulative_p_value\":{:.6g},\"cumulative_significant\":{},\"q_value\":{:.6g},"
        "\"cumulative_q_value\":{:.6g},\"rate_z\":{:.4f},\"rate_p_value\":{:.6g},\"rate_q_value\":{:.6g},"
        "\"rate_significant\":{},\"base_observations\":{},\"new_observations\":{}}}",
        json_escape(r.function), json_escape(r.object), r.base_samples, r.new_samples, r.base_percent,
        r.new_percent, r.delta, r.delta_error, r.z, r.p_value, r.base_seconds, r.new_seconds, r.delta_samples,
        r.delta_seconds, r.significant, r.base_cumulative, r.new_cumulative, r.base_cumulative_percent,
        r.new_cumulative_percent, r.cumulative_delta, r.cumulative_z, r.cumulative_p_value,
        r.cumulative_significant, r.q_value, r.cumulative_q_value, r.rate_z, r.rate_p_value, r.rate_q_value,
        r.rate_significant, draws ? std::to_string(r.base_observations) : "null",
        draws ? std::to_string(r.new_observations) : "null");
  }
  return out + fmt::format("\n],\"rate_per\":\"{}\"}}\n", diff.per_wall_second ? "wall_second" : "run");
}

}  // namespace profiling::report
