// `profil report`: a symbolized flat profile of one or more profiles (summed),
// by function, source line, object or instruction, in the format asked for.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "command.h"
#include "report/export.h"
#include "report/input.h"
#include "report/render.h"
#include "report/report.h"

namespace profiling::cli {
namespace {

struct ReportArgs {
  std::vector<std::string> files;
  std::string format = "text";
  std::string by = "function";
  size_t top = 0;
  double min_percent = 0;
  std::string focus;
  std::string exe;
  std::string output;
  std::string color = "auto";
};

bool use_colour(const std::string& mode, bool to_file) {
  if (mode == "always") return true;
  if (mode == "never" || to_file) return false;
  // no-color.org: any non-empty NO_COLOR turns colour off.
  const char* no_color = std::getenv("NO_COLOR");
  return isatty(STDOUT_FILENO) && !(no_color && *no_color);
}

void print_warnings(report::Symbolizer& symbolizer) {
  for (const std::string& w : symbolizer.take_warnings()) std::fprintf(stderr, "profil: warning: %s\n", w.c_str());
}

int emit(const std::string& output, const std::string& bytes, bool binary) {
  if (!output.empty() && output != "-") {
    try {
      report::write_file_atomically(output, bytes);
    } catch (const std::exception& e) {
      return fail(output, e.what());
    }
    return 0;
  }
  if (binary && isatty(STDOUT_FILENO)) return fail("stdout", "binary output to a terminal; use -o FILE");
  if (std::fwrite(bytes.data(), 1, bytes.size(), stdout) != bytes.size() || std::fflush(stdout) != 0)
    return fail("stdout", "write failed");
  return 0;
}

int run_report(const ReportArgs& args) {
  report::ReportOptions options;
  if (!report::parse_view(args.by, &options.view)) return fail("--by", "unknown view " + args.by);
  options.top = args.top;
  if (options.top == 0 && options.view == report::View::address) options.top = 40;
  options.min_percent = args.min_percent;
  if (!args.focus.empty()) {
    try {
      options.focus.emplace(args.focus);
    } catch (const std::invalid_argument& e) {
      return fail("--focus", std::string("bad regular expression: ") + e.what());
    }
    options.focus_text = args.focus;
  }
  std::vector<report::LoadedProfile> inputs;
  format::Profile profile;
  bool saturated = false;
  try {
    for (const std::string& file : args.files) inputs.push_back(report::load_profile(file, args.exe));
    profile = report::merge_profiles(std::move(inputs), &saturated);
  } catch (const report::InputError& e) {
    return fail(e.file(), e.what());
  }
  if (saturated) report::warn_saturated();
  report::Symbolizer symbolizer;
  bool to_file = !args.output.empty() && args.output != "-";
  if (args.format == "pprof" || args.format == "gmon") {
    std::string bytes;
    try {
      if (args.format == "pprof") {
        bytes = report::export_pprof(profile, symbolizer);
      } else {
        uint64_t left_out = 0;
        bytes = report::export_gmon(profile, symbolizer, &left_out);
        if (left_out)
          std::fprintf(stderr, "profil: warning: %llu samples outside the main executable are not in the gmon file\n",
                       static_cast<unsigned long long>(left_out));
      }
    } catch (const std::exception& e) {
      return fail(args.files.front(), e.what());
    }
    print_warnings(symbolizer);
    return emit(args.output, bytes, true);
  }
  bool lines = options.view == report::View::line;
  bool per_address = options.view == report::View::address || args.format == "html";
  report::SymbolizedProfile symbolized = report::symbolize_profile(profile, symbolizer, lines, per_address);
  if (symbolized.saturated && !saturated) report::warn_saturated();
  report::Report built = report::build_report(symbolized, options, args.files);
  std::string text;
  if (args.format == "text")
    text = report::render_text(built, use_colour(args.color, to_file));
  else if (args.format == "csv")
    text = report::render_csv(built);
  else if (args.format == "json")
    text = report::render_json(built);
  else if (args.format == "folded")
    text = report::render_folded(built);
  else if (args.format == "html")
    text = report::render_html(built, symbolized, symbolizer);
  else
    return fail("--format", "unknown format " + args.format);
  print_warnings(symbolizer);
  return emit(args.output, text, false);
}

RegisterCommand register_report(
    "report", "Print a symbolized flat profile of one or more profiles (pprof, gmon.out, profraw)",
    [](CLI::App& app) -> std::function<int()> {
      auto args = std::make_shared<ReportArgs>();
      app.add_option("files", args->files, "Profiles to read (summed)")->required();
      app.add_option("--format,-f", args->format, "text, csv, json, folded, html, pprof or gmon")
          ->check(CLI::IsMember({"text", "csv", "json", "folded", "html", "pprof", "gmon"}));
      app.add_option("--by", args->by, "Rows by function, line, object or address")
          ->check(CLI::IsMember({"function", "line", "object", "address"}));
      app.add_option("--top", args->top, "Show only the N hottest rows");
      app.add_option("--min-percent", args->min_percent, "Leave out rows below P percent");
      app.add_option("--focus", args->focus, "Only rows whose function matches REGEX (object in --by object)");
      app.add_option("--exe", args->exe, "The program a gmon.out file came from (default a.out)");
      app.add_option("--output,-o", args->output, "Write to FILE instead of standard output");
      app.add_option("--color", args->color, "auto, always or never")
          ->check(CLI::IsMember({"auto", "always", "never"}));
      return [args] { return run_report(*args); };
    },
    20);

}  // namespace
}  // namespace profiling::cli
