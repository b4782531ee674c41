// `profil diff BASE NEW`: which functions gained or lost share of the
// samples, most significant first, in samples and seconds, self and
// cumulative, each change marked as beyond the sampling noise or not.
#include <cstdio>
#include <memory>

#include "command.h"
#include "common.h"
#include "formats.h"
#include "report/input.h"
#include "report/report.h"
#include "report/stacks.h"

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
  auto base_symbolized = report::symbolize_profile(base.profile, symbolizer, false, false);
  auto new_symbolized = report::symbolize_profile(changed.profile, symbolizer, false, false);
  if (base_symbolized.saturated || new_symbolized.saturated) report::warn_saturated();
  // Both sides as stacks (inline frames, cumulative counts), named by the
  // one symbolizer so that a function has one name on both sides.
  report::ElfFrameSymbolizer frames(symbolizer);
  auto base_stacks = std::make_shared<const report::StackSet>(report::build_stacks(base.profile, frames));
  auto new_stacks = std::make_shared<const report::StackSet>(report::build_stacks(changed.profile, frames));
  const report::Summary base_summary = report::summarize(base_symbolized, {args.base});
  const report::Summary new_summary = report::summarize(new_symbolized, {args.changed});
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
