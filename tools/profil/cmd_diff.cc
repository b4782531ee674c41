// `profil diff BASE NEW`: which functions gained or lost share of the
// samples, most significant first, in samples and seconds, self and
// cumulative, each change marked as beyond the sampling noise or not.
#include <cstdio>
#include <memory>
#include <vector>

#include "command.h"
#include "common.h"
#include "formats.h"
#include "report/diff.h"
#include "report/input.h"
#include "report/model.h"
#include "report/report.h"

namespace profiling::cli {
namespace {

struct DiffArgs {
  std::string base, changed;
  std::string format = "text";
  std::string exe;
  size_t top = 0;
  std::string color = "auto";
  std::string symbolize = "auto";
  std::string output;
  bool per_second = false;
};

int run_diff(const DiffArgs& args) {
  report::LoadedProfile base, changed;
  try {
    base = report::load_profile(args.base, args.exe);
    changed = report::load_profile(args.changed, args.exe);
  } catch (const report::InputError& e) {
    return fail(e.file(), e.what());
  }
  report::Symbolizer symbolizer;
  symbolizer.file_names_first(args.symbolize == "auto");
  // Both sides as stacks (inline frames, cumulative counts), named in one
  // pass each by the one symbolizer so that a function has one name on
  // both sides (model.h).
  std::vector<report::Model> models = report::build_models({&base.profile, &changed.profile}, symbolizer, {});
  if (models[0].symbolized.saturated || models[1].symbolized.saturated) report::warn_saturated();
  const report::Summary base_summary = report::summarize(models[0].symbolized, {args.base});
  const report::Summary new_summary = report::summarize(models[1].symbolized, {args.changed});
  std::shared_ptr<const report::StackSet> base_stacks = models[0].stacks, new_stacks = models[1].stacks;
  if (args.per_second && (base_summary.wall_seconds <= 0 || new_summary.wall_seconds <= 0))
    return fail(base_summary.wall_seconds <= 0 ? args.base : args.changed,
                "--per-second: the profile does not say how long it covers");
  report::Diff diff = report::diff_stacks(*base_stacks, *new_stacks, base_summary, new_summary,
                                          {.per_wall_second = args.per_second});
  diff.base_stacks = std::move(base_stacks);
  diff.new_stacks = std::move(new_stacks);
  if (args.top && diff.rows.size() > args.top) diff.rows.resize(args.top);
  print_warnings(symbolizer);
  const bool colour = use_colour(args.color, writes_to_file(args.output));
  const std::string text = find_format(FormatUse::diff, args.format)->compared(diff, args.base, args.changed, colour);
  return emit(args.output, text, false);
}

RegisterCommand register_diff(
    "diff", "Compare two profiles: which functions gained or lost share (what got slower)",
    [](CLI::App& app) -> std::function<int()> {
      auto args = std::make_shared<DiffArgs>();
      app.add_option("base", args->base, "The profile before")->required();
      app.add_option("new", args->changed, "The profile after")->required();
      add_format_option(app, &args->format, FormatUse::diff);
      app.add_option("--top", args->top, "Show only the first N rows");
      app.add_flag("--per-second", args->per_second,
                   "Test each function's samples per wall second of each profile, not per run (profiles of "
                   "different lengths)");
      app.add_option("--exe", args->exe, "The program gmon.out inputs came from (default a.out)");
      add_symbolize_option(app, &args->symbolize);
      add_output_option(app, &args->output, "Write to FILE");
      add_color_option(app, &args->color);
      return [args] { return run_diff(*args); };
    },
    40);

}  // namespace
}  // namespace profiling::cli
