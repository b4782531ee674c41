// profil: run programs under the sampler and read what they recorded.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>

#include "batch_heap.h"
#include "command.h"
#include "end_like.h"

namespace profiling::cli {

std::vector<CommandEntry>& command_registry() {
  static std::vector<CommandEntry> registry;
  return registry;
}

RegisterCommand::RegisterCommand(std::string name, std::string description, CommandSetup setup, int order,
                                 bool takes_program, int usage_status) {
  command_registry().push_back(
      {std::move(name), std::move(description), std::move(setup), order, takes_program, usage_status});
}

int fail(const std::string& what, const std::string& why) {
  std::fprintf(stderr, "profil: %s: %s\n", what.c_str(), why.c_str());
  return 1;
}

namespace {
std::vector<std::string> g_program_words;
bool g_program_after_dashes = false;
}  // namespace

const std::vector<std::string>& program_words() { return g_program_words; }
bool program_words_after_dashes() { return g_program_after_dashes; }

void split_program_words(const CLI::App& app, const std::vector<std::string>& words,
                         std::vector<std::string>* options, std::vector<std::string>* program, bool* dashes) {
  auto option_named = [&app](const std::string& name, bool is_long) -> const CLI::Option* {
    for (const CLI::Option* option : app.get_options()) {
      const std::vector<std::string>& names = is_long ? option->get_lnames() : option->get_snames();
      if (std::find(names.begin(), names.end(), name) != names.end()) return option;
    }
    return nullptr;
  };
  auto takes_value = [](const CLI::Option* option) { return option->get_items_expected_max() > 0; };
  // "--name=VALUE" whatever the user wrote, so CLI11 never reads a value
  // that begins with '-' as an option.
  auto joined = [](const CLI::Option* option, const std::string& value) {
    if (!option->get_lnames().empty()) return "--" + option->get_lnames().front() + "=" + value;
    return "-" + option->get_snames().front() + value;
  };
  size_t i = 0;
  for (; i < words.size(); ++i) {
    const std::string& word = words[i];
    if (word == "--") {
      if (dashes != nullptr) *dashes = true;
      ++i;
      break;
    }
    if (word.size() < 2 || word[0] != '-') break;  // the program ("-" alone names a file)
    if (word[1] == '-') {
      const size_t equals = word.find('=');
      const CLI::Option* option = option_named(word.substr(2, equals == std::string::npos ? equals : equals - 2), true);
      if (option && takes_value(option) && equals == std::string::npos && i + 1 < words.size())
        options->push_back(joined(option, words[++i]));
      else
        options->push_back(word);  // a flag, --name=VALUE, or unknown: CLI11 says what is wrong
      continue;
    }
    // A cluster of short options, "-vo DIR" or "-oDIR".
    for (size_t k = 1; k < word.size(); ++k) {
      const CLI::Option* option = option_named(word.substr(k, 1), false);
      if (!option) {
        options->push_back("-" + word.substr(k));  // unknown: CLI11 says so
        break;
      }
      if (!takes_value(option)) {
        options->push_back("-" + word.substr(k, 1));
        continue;
      }
      if (k + 1 < word.size())
        options->push_back(joined(option, word.substr(k + 1)));
      else if (i + 1 < words.size())
        options->push_back(joined(option, words[++i]));
      else
        options->push_back("-" + word.substr(k, 1));  // its value is missing: CLI11 says so
      break;
    }
  }
  program->assign(words.begin() + static_cast<std::ptrdiff_t>(i), words.end());
}

}  // namespace profiling::cli

int main(int argc, char** argv) {
  using namespace profiling::cli;
  CLI::App app{"profil: process program-counter sampling for Linux", "profil"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "profil " PROFIL_VERSION);

  auto& registry = command_registry();
  std::sort(registry.begin(), registry.end(),
            [](const CommandEntry& a, const CommandEntry& b) { return a.order < b.order; });
  std::vector<std::pair<CLI::App*, std::function<int()>>> commands;
  for (auto& entry : registry) {
    CLI::App* sub = app.add_subcommand(entry.name, entry.description);
    commands.emplace_back(sub, entry.setup(*sub));
  }

  // The command is the first word that is not an option of profil itself
  // (only --help and --version are). A command that runs a program gets
  // only its option words parsed; the program's words are set aside intact.
  std::vector<std::string> words(argv + 1, argv + argc);
  const CommandEntry* command = nullptr;
  for (size_t i = 0; i < words.size(); ++i) {
    if (words[i].size() > 1 && words[i][0] == '-') continue;
    for (size_t k = 0; k < registry.size(); ++k) {
      if (registry[k].name != words[i]) continue;
      command = &registry[k];
      if (command->takes_program) {
        std::vector<std::string> rest(words.begin() + static_cast<std::ptrdiff_t>(i) + 1, words.end()), options;
        split_program_words(*commands[k].first, rest, &options, &g_program_words, &g_program_after_dashes);
        words.resize(i + 1);
        words.insert(words.end(), options.begin(), options.end());
      }
    }
    break;
  }
  try {
    // CLI11 takes the words last first.
    std::reverse(words.begin(), words.end());
    app.parse(words);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line (CLI11's own exit() adds a second, and its own statuses).
    std::string message = e.what();
    std::replace(message.begin(), message.end(), '\n', ' ');
    std::fprintf(stderr, "profil%s%s: %s (see --help)\n", command ? " " : "", command ? command->name.c_str() : "",
                 message.c_str());
    return command ? command->usage_status : 2;
  }
  // A command that runs a program tunes its heap only when it converts
  // (run_convert.cc), after the program was started: never before the fork.
  if (command != nullptr && !command->takes_program) use_batch_heap();
  try {
    for (auto& [sub, run] : commands) {
      if (!sub->parsed()) continue;
      const int status = run();
      if (pending_end_signal() != 0) end_by_signal(pending_end_signal());
      return status;
    }
  } catch (const std::exception& e) {
    return fail("error", e.what());
  }
  return 1;
}
