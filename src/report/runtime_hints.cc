#include "report/runtime_hints.h"

#include <fmt/format.h>

#include <string_view>

namespace profiling::report {
namespace {

std::string_view base_name(std::string_view path) { return path.substr(path.rfind('/') + 1); }

// What would name a runtime's JIT code, by the program that ran it: profil
// run --jit first (issue 34: it asks the runtime itself), then the
// runtime's own switch.
std::string jit_remedy(std::string_view program) {
  if (program.starts_with("node") || program.starts_with("nodejs"))
    return "profil run --jit starts node with --perf-basic-prof, whose map profil reads (or give node the flag, "
           "or NODE_OPTIONS=--perf-basic-prof, yourself)";
  if (program.starts_with("java"))
    return "profil run --jit (or profil attach --jit) asks the JVM for a map of it, which profil reads (as "
           "jcmd PID Compiler.perfmap does; JDK 17)";
  return "a map the runtime writes (/tmp/perf-PID.map, as perf reads, or a jitdump) would name it";
}

}  // namespace

std::vector<std::string> runtime_hints(const SymbolizedProfile& symbolized) {
  if (symbolized.total == 0 || symbolized.profile == nullptr) return {};
  uint64_t jit = 0, ruby = 0;
  for (const SymbolizedSample& s : symbolized.samples) {
    if (s.mapping == nullptr) continue;
    if (s.mapping->path == "[anon]" && !s.symbol.known && !s.symbol.from_profile) jit += s.count;
    if (base_name(s.mapping->path).starts_with("libruby")) ruby += s.count;
  }
  const auto share = [&](uint64_t n) { return 100.0 * static_cast<double>(n) / static_cast<double>(symbolized.total); };
  std::vector<std::string> hints;
  if (share(jit) >= 20)
    hints.push_back(fmt::format("{:.0f}% of the samples are JIT code no map names ([anon]); {}", share(jit),
                                jit_remedy(base_name(symbolized.profile->program))));
  // A profile with Ruby methods (issue 34) has them merged where they ran.
  const auto& frames = symbolized.profile->frames;
  const bool ruby_methods = frames.lower_bound(format::kRubyFrameBase) != frames.lower_bound(format::kInterpreterFrameLimit);
  if (share(ruby) >= 20 && !ruby_methods)
    hints.push_back(fmt::format("{:.0f}% of the samples are in Ruby's interpreter (libruby), and the profile has no "
                                "Ruby methods: profil reads them for Ruby 3.1, from outside (run, attach; not "
                                "--inside), and says in the run's summary why it did not",
                                share(ruby)));
  return hints;
}

}  // namespace profiling::report
