#include "common.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "command.h"
#include "format/file_io.h"
#include "report/report.h"

namespace profiling::cli {

int load_inputs(const std::vector<std::string>& files, const std::string& exe,
                std::vector<report::LoadedProfile>* inputs, format::Profile* merged, bool* saturated,
                report::Processes processes) {
  bool overflow = false;
  try {
    // Each file is summed as soon as it is read and then dropped (issue
    // 23): memory follows the sum, not the number of files. The inputs
    // keep their names and types only.
    report::ProfileMerger merger(processes);
    for (const std::string& file : files) {
      report::LoadedProfile loaded = report::load_profile(file, exe);
      inputs->push_back({loaded.path, loaded.kind, {}});
      merger.add(std::move(loaded));
    }
    *merged = merger.finish(&overflow);
  } catch (const report::InputError& e) {
    return fail(e.file(), e.what());
  }
  if (saturated != nullptr)
    *saturated = overflow;
  else if (overflow)
    report::warn_saturated();
  return 0;
}

void print_warnings(const std::vector<std::string>& warnings) {
  for (const std::string& w : warnings) std::fprintf(stderr, "profil: warning: %s\n", w.c_str());
}

void print_warnings(report::Symbolizer& symbolizer) { print_warnings(symbolizer.take_warnings()); }

void add_color_option(CLI::App& app, std::string* mode) {
  app.add_option("--color", *mode, "auto, always or never (default auto: on a terminal, unless NO_COLOR is set)")
      ->check(CLI::IsMember({"auto", "always", "never"}));
}

bool use_colour(const std::string& mode, bool to_file) {
  if (mode == "always") return true;
  if (mode == "never" || to_file) return false;
  // no-color.org: any non-empty NO_COLOR turns colour off.
  const char* no_color = std::getenv("NO_COLOR");
  return isatty(STDOUT_FILENO) && !(no_color && *no_color);
}

void add_symbolize_option(CLI::App& app, std::string* mode) {
  app.add_option("--symbolize", *mode,
                 "auto: names, lines and inline frames from the file where it carries them all (as profil run "
                 "writes them), else from the objects; force: from the objects always (default auto)")
      ->check(CLI::IsMember({"auto", "force"}));
}

void add_output_option(CLI::App& app, std::string* output, const std::string& what) {
  app.add_option("--output,-o", *output, what + " (default: standard output)");
}

bool writes_to_file(const std::string& output) { return !output.empty() && output != "-"; }

int emit(const std::string& output, const std::string& bytes, bool binary) {
  if (writes_to_file(output)) {
    std::string problem;
    if (!format::try_write_file_atomically(output, bytes, &problem)) return fail(output, problem);
    return 0;
  }
  if (binary && isatty(STDOUT_FILENO)) return fail("stdout", "binary output to a terminal; use -o FILE");
  if (std::fwrite(bytes.data(), 1, bytes.size(), stdout) != bytes.size() || std::fflush(stdout) != 0)
    return fail("stdout", "write failed");
  return 0;
}

}  // namespace profiling::cli
