// Subcommands register themselves here, one file each (cmd_run.cc,
// cmd_report.cc, ...), so that adding a command touches no other file.
#ifndef PROFIL_TOOLS_COMMAND_H
#define PROFIL_TOOLS_COMMAND_H

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace profiling::cli {

// Adds the subcommand's options to app and returns the callback that runs it
// once parsing succeeded; the callback returns the process exit status.
using CommandSetup = std::function<std::function<int()>(CLI::App& app)>;

struct CommandEntry {
  std::string name;
  std::string description;
  CommandSetup setup;
  int order;  // position in --help
};

std::vector<CommandEntry>& command_registry();

struct RegisterCommand {
  RegisterCommand(std::string name, std::string description, CommandSetup setup, int order);
};

// The one-line error every command prints on bad input: "profil: WHAT: WHY".
// Returns the exit status to use (1).
int fail(const std::string& what, const std::string& why);

}  // namespace profiling::cli

#endif  // PROFIL_TOOLS_COMMAND_H
