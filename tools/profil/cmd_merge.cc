// `profil merge -o OUT FILE...`: sums profiles as `gprof -s` does (objects
// matched by build id, inputs of different sampling periods refused), one
// file at a time (report/merge.h): the processes summed over, or kept
// apart by pid with --by-process.
#include <cstdio>

#include "command.h"
#include "common.h"
#include "formats.h"
#include "report/input.h"
#include "report/merge.h"

namespace profiling::cli {
namespace {

struct MergeArgs {
  std::vector<std::string> files;
  std::string output;
  std::string format;
  std::string exe;
  bool by_process = false;
};

int run_merge(const MergeArgs& args) {
  std::vector<report::LoadedProfile> inputs;
  format::Profile merged;
  bool saturated = false;
  const auto processes = args.by_process ? report::Processes::apart : report::Processes::summed;
  if (int status = load_inputs(args.files, args.exe, &inputs, &merged, &saturated, processes)) return status;
  // A merged file must hold the true sums; a report may show them
  // saturated, a file that is read again may not.
  if (saturated) return fail(args.files.back(), "sample counts add up to more than 2^64-1; cannot merge");
  // The output type: asked for, else gmon when every input is gmon (what
  // their gprof users read), else pprof.
  std::string format = args.format;
  if (format.empty()) {
    bool all_gmon = true;
    for (const auto& input : inputs) all_gmon = all_gmon && input.kind == report::InputKind::gmon;
    format = all_gmon ? "gmon" : "pprof";
  }
  report::Symbolizer symbolizer;
  std::string bytes;
  try {
    bytes = find_format(FormatUse::merge, format)->exported(merged, symbolizer, args.output);
  } catch (const std::exception& e) {
    return fail(args.output, e.what());
  }
  print_warnings(symbolizer);
  return emit(args.output, bytes, true);
}

RegisterCommand register_merge(
    "merge", "Sum profiles into one (as gprof -s does)",
    [](CLI::App& app) -> std::function<int()> {
      auto args = std::make_shared<MergeArgs>();
      app.add_option("files", args->files, "Profiles to sum")->required();
      app.add_option("--output,-o", args->output, "The summed profile")->required();
      add_format_option(app, &args->format, FormatUse::merge, " (default: gmon when every input is gmon, else pprof)");
      app.add_option("--exe", args->exe, "The program gmon.out inputs came from (default a.out)");
      app.add_flag("--by-process", args->by_process,
                   "Keep each process's samples apart (a pid label on each); by default they are summed");
      return [args] { return run_merge(*args); };
    },
    30);

}  // namespace
}  // namespace profiling::cli
