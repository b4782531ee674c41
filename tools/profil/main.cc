// profil: run programs under the sampler and read what they recorded.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <memory>

#include "command.h"

namespace profiling::cli {

std::vector<CommandEntry>& command_registry() {
  static std::vector<CommandEntry> registry;
  return registry;
}

RegisterCommand::RegisterCommand(std::string name, std::string description, CommandSetup setup,
                                 int order) {
  command_registry().push_back({std::move(name), std::move(description), std::move(setup), order});
}

int fail(const std::string& what, const std::string& why) {
  std::fprintf(stderr, "profil: %s: %s\n", what.c_str(), why.c_str());
  return 1;
}

}  // namespace profiling::cli

int main(int argc, char** argv) {
  using namespace profiling::cli;
  CLI::App app{"profil: process program-counter sampling for Linux"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "profil 0.1.0");

  auto& registry = command_registry();
  std::sort(registry.begin(), registry.end(),
            [](const CommandEntry& a, const CommandEntry& b) { return a.order < b.order; });
  std::vector<std::pair<CLI::App*, std::function<int()>>> commands;
  for (auto& entry : registry) {
    CLI::App* sub = app.add_subcommand(entry.name, entry.description);
    commands.emplace_back(sub, entry.setup(*sub));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    for (auto& [sub, run] : commands)
      if (sub->parsed()) return run();
  } catch (const std::exception& e) {
    return fail("error", e.what());
  }
  return 1;
}
