// `profil report`: a symbolized flat profile of one or more profiles (summed),
// by function, source line, object or instruction, in the format asked for.
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <tuple>

#include "command.h"
#include "common.h"
#include "formats.h"
#include "report/call_relations.h"
#include "report/input.h"
#include "report/interpreter_view.h"
#include "report/missing_symbols.h"
#include "report/model.h"
#include "report/report.h"
#include "report/runtime_hints.h"

namespace profiling::cli {
namespace {

struct ReportArgs {
  std::vector<std::string> files;
  std::string format = "text";
  std::string by = "function";
  std::string sort = "self";
  size_t top = 0;
  double min_percent = 0;
  std::string focus, ignore, hide, callers, callees;
  std::string exe;
  std::string output;
  std::string color = "auto";
  std::string symbolize = "auto";
  std::string interpreter = "merged";
  bool folded_objects = false;
  bool threads = false;
  bool no_inlines = false;
};

int run_report(const ReportArgs& args) {
  report::ReportOptions options;
  if (!report::parse_view(args.by, &options.view)) return fail("--by", "unknown view " + args.by);
  if (!report::parse_row_order(args.sort, &options.sort)) return fail("--sort", "unknown order " + args.sort);
  options.top = args.top;
  if (options.top == 0 && options.view == report::View::address) options.top = 40;
  options.min_percent = args.min_percent;
  options.folded_objects = args.folded_objects;
  options.thread_roots = args.threads;
  options.inline_frames = !args.no_inlines;
  // Every pattern is RE2, checked before any input is read.
  std::optional<report::FocusPattern> relation_pattern;
  for (auto [name, text, pattern] :
       {std::tuple{"--focus", &args.focus, &options.focus}, std::tuple{"--ignore", &args.ignore, &options.ignore},
        std::tuple{"--hide", &args.hide, &options.hide},
        std::tuple{"--callers", &args.callers, &relation_pattern},
        std::tuple{"--callees", &args.callees, &relation_pattern}}) {
    if (text->empty()) continue;
    try {
      pattern->emplace(*text);
    } catch (const std::invalid_argument& e) {
      return fail(name, std::string("bad regular expression: ") + e.what());
    }
  }
  options.focus_text = args.focus;
  if (!args.callers.empty() && !args.callees.empty()) return fail("--callees", "give --callers or --callees, not both");
  const bool relations = relation_pattern.has_value();
  if (relations && args.format != "text" && args.format != "csv" && args.format != "json")
    return fail("--format", "--callers and --callees print text, csv or json");
  std::vector<report::LoadedProfile> inputs;
  format::Profile profile;
  bool saturated = false;
  // Summed over processes (and threads) unless a view asks for them: the
  // sum is then bounded by the distinct stacks, however many processes.
  // A timeline (speedscope, the HTML page) is per thread: its samples keep
  // their threads (merge.h Processes::apart).
  const OutputFormat* wanted = find_format(FormatUse::report, args.format);
  const bool tasks = options.view == report::View::thread || options.view == report::View::process || args.threads ||
                     (wanted != nullptr && wanted->timeline);
  if (int status = load_inputs(args.files, args.exe, &inputs, &profile, &saturated,
                               tasks ? report::Processes::apart : report::Processes::summed))
    return status;
  if (saturated) report::warn_saturated();
  const OutputFormat* format = find_format(FormatUse::report, args.format);
  // An interpreted program's frames (report/interpreter_view.h): the views
  // show the chosen stack; an exported file keeps them all.
  if (format != nullptr && format->exported == nullptr)
    report::apply_interpreter_view(&profile, *report::parse_interpreter_view(args.interpreter));
  if (format == nullptr) return fail("--format", "unknown format " + args.format);
  report::Symbolizer symbolizer;
  const bool to_file = writes_to_file(args.output);
  if (format->exported != nullptr) {
    // The pprof file keeps every frame (pprof's -noinlines folds them when
    // it reads it); gmon.out has none.
    if (args.no_inlines) return fail("--no-inlines", "applies to the report's views, not to --format " + args.format);
    std::string bytes;
    try {
      bytes = format->exported(profile, symbolizer, "the gmon file");
    } catch (const std::exception& e) {
      return fail(args.files.front(), e.what());
    }
    print_warnings(symbolizer);
    return emit(args.output, bytes, true);
  }
  // The address view disassembles each function, which needs its address
  // and size from the object's symbol table; every other view takes the
  // file's names as pprof does.
  symbolizer.file_names_first(args.symbolize == "auto" && options.view != report::View::address);
  // The one symbolizing pass (model.h): each address named once into the
  // leaves and the stacks every view reads; no view sees the symbolizer.
  // Callers and callees are functions, whatever the rows are by.
  report::ReportOptions model_options = options;
  if (relations) model_options.view = report::View::function;
  const report::Model model =
      report::build_model(profile, symbolizer, model_options, relations ? report::ModelNeeds{} : format->needs());
  if (model.symbolized.saturated && !saturated) report::warn_saturated();
  // Objects that are mostly unnamed: what would name them (missing_symbols.h).
  for (const std::string& hint : report::missing_symbol_hints(model.symbolized))
    std::fprintf(stderr, "profil: hint: %s\n", hint.c_str());
  // A runtime's code nothing names: what would (runtime_hints.h).
  for (const std::string& hint : report::runtime_hints(model.symbolized))
    std::fprintf(stderr, "profil: hint: %s\n", hint.c_str());
  if (relations) {
    const auto found = report::call_relations(*model.stacks, *relation_pattern);
    const auto which = args.callers.empty() ? report::Relation::callees : report::Relation::callers;
    const report::Summary summary = report::summarize(model.symbolized, args.files);
    std::string text = args.format == "csv"    ? report::render_relations_csv(found, which)
                       : args.format == "json" ? report::render_relations_json(found, which, summary)
                                               : report::render_relations_text(found, which, summary,
                                                                               use_colour(args.color, to_file));
    print_warnings(symbolizer);
    return emit(args.output, text, false);
  }
  report::Report built = report::build_report(model.symbolized, options, args.files, model.stacks);
  built.timeline = model.timeline;
  if (model.timeline && !model.timeline->has_times && args.format == "speedscope")
    std::fprintf(stderr, "profil: note: %s: no times in this profile (only profiles sampled from outside have them): "
                 "each thread's stacks are in no time order\n", args.files.front().c_str());
  std::string text = format->rendered(built, model.symbolized, use_colour(args.color, to_file));
  print_warnings(symbolizer);
  return emit(args.output, text, false);
}

RegisterCommand register_report(
    "report", "Print a symbolized flat profile of one or more profiles (pprof, gmon.out, profraw)",
    [](CLI::App& app) -> std::function<int()> {
      auto args = std::make_shared<ReportArgs>();
      app.add_option("files", args->files, "Profiles to read (summed)")->required();
      add_format_option(app, &args->format, FormatUse::report);
      app.add_option("--by", args->by, "Rows by function, line, object, address, thread or process")
          ->check(CLI::IsMember({"function", "line", "object", "address", "thread", "process"}));
      app.add_flag("--threads", args->threads,
                   "Each stack's thread (\"name tid\") as its root in the tree, folded stacks and flame graph");
      app.add_option("--sort", args->sort,
                     "Rows by self samples (the default), total samples (the row and all it called) or name")
          ->check(CLI::IsMember({"self", "total", "name"}));
      app.add_option("--top", args->top, "Show only the first N rows (the N hottest by default)");
      app.add_option("--min-percent", args->min_percent, "Leave out rows below P percent");
      app.add_option("--focus", args->focus,
                     "Only samples whose stack has a function matching REGEX (an object in --by object)");
      app.add_option("--ignore", args->ignore, "Leave out samples whose stack has a function matching REGEX");
      app.add_option("--hide", args->hide, "Remove the functions matching REGEX from every stack");
      app.add_option("--callers", args->callers,
                     "Each function matching REGEX with its callers: samples on each edge and their share");
      app.add_option("--callees", args->callees,
                     "Each function matching REGEX with its callees: samples on each edge and their share");
      app.add_flag("--no-inlines", args->no_inlines,
                   "Name each address by the function the symbol table names, at its line there: inlined "
                   "functions' samples go to the function they were inlined into (pprof -noinlines)");
      app.add_option("--exe", args->exe, "The program a gmon.out file came from (default a.out)");
      app.add_flag("--folded-objects", args->folded_objects,
                   "In --format folded, name each frame object`function (default: the function alone)");
      add_symbolize_option(app, &args->symbolize);
      app.add_option("--interpreter", args->interpreter,
                     "An interpreted program's stacks: its own functions in place of the interpreter's loop "
                     "(merged, the default), its functions alone (python or ruby), or the native frames alone (native)")
          ->check(CLI::IsMember({"merged", "python", "ruby", "native"}));
      add_output_option(app, &args->output, "Write to FILE");
      add_color_option(app, &args->color);
      return [args] { return run_report(*args); };
    },
    20);

}  // namespace
}  // namespace profiling::cli
