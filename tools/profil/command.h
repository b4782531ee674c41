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
  // A command that runs a program (`profil run`): its options end at the
  // first word that is not one of them, or at a "--" (consumed), as env(1),
  // time(1) and strace(1) have it; the words from there on are the
  // program's, byte for byte, and never reach CLI11 (program_words()).
  bool takes_program = false;
  // The exit status of a usage error (env(1) and timeout(1) use 125, so
  // that it cannot be taken for the program's own status).
  int usage_status = 2;
};

std::vector<CommandEntry>& command_registry();

struct RegisterCommand {
  RegisterCommand(std::string name, std::string description, CommandSetup setup, int order,
                  bool takes_program = false, int usage_status = 2);
};

// The program and its arguments, for the command registered with
// takes_program, as they were given.
const std::vector<std::string>& program_words();
// Whether a "--" came before them: `profil top -- 1234` runs a program
// named 1234, `profil top 1234` watches pid 1234 (issue 33).
bool program_words_after_dashes();

// Splits the words after a takes_program command's name: the option words,
// each value-taking option joined to its value (--name=VALUE, so that a
// value beginning with '-' is never taken for an option), go to *options;
// the words from the first non-option on (after a "--", which is dropped,
// and then sets *dashes when given) to *program. Which options take a value is read from app's CLI11 options.
void split_program_words(const CLI::App& app, const std::vector<std::string>& words,
                         std::vector<std::string>* options, std::vector<std::string>* program,
                         bool* dashes = nullptr);

// The one-line error every command prints on bad input: "profil: WHAT: WHY".
// Returns the exit status to use (1).
int fail(const std::string& what, const std::string& why);

}  // namespace profiling::cli

#endif  // PROFIL_TOOLS_COMMAND_H
