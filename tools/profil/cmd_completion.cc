// `profil completion bash|zsh` (issue 35): a shell completion script made
// from the command-line parser itself: CLI11's App walked for its commands,
// their options (and whether each takes a value) and the values an option
// checks against (an IsMember set, "{a,b,c}"), so that a new command or
// option completes without this file changing. After a command that runs a
// program (run, top), `--` completes a command name, and the words after
// it are that program's.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "command.h"

namespace profiling::cli {
namespace {

struct OptionWords {
  std::vector<std::string> names;  // "--output", "-o"
  std::string description;
  bool takes_value = false;
  std::vector<std::string> values;  // what the option's check accepts; empty: files
};

struct CommandWords {
  std::string name, description;
  bool takes_program = false;
  std::vector<OptionWords> options;
};

// "{a,b,c}" -> a b c; anything else (a range, a file check) -> none.
std::vector<std::string> set_values(const std::string& description) {
  std::vector<std::string> values;
  if (description.size() < 2 || description.front() != '{' || description.back() != '}') return values;
  std::string word;
  for (char c : description.substr(1, description.size() - 2)) {
    if (c == ',') {
      if (!word.empty()) values.push_back(word);
      word.clear();
    } else {
      word += c;
    }
  }
  if (!word.empty()) values.push_back(word);
  return values;
}

std::vector<OptionWords> options_of(CLI::App& app) {
  std::vector<OptionWords> out;
  for (CLI::Option* option : app.get_options()) {
    if (option->get_lnames().empty() && option->get_snames().empty()) continue;  // positional
    OptionWords words;
    for (const std::string& name : option->get_lnames()) words.names.push_back("--" + name);
    for (const std::string& name : option->get_snames()) words.names.push_back("-" + name);
    words.description = option->get_description();
    words.takes_value = option->get_items_expected_max() > 0;
    if (words.takes_value) {
      try {
        words.values = set_values(option->get_validator()->get_description());
      } catch (const CLI::OptionNotFound&) {
        // no check: any value
      }
    }
    out.push_back(std::move(words));
  }
  return out;
}

std::vector<CommandWords> commands_of(CLI::App& root) {
  std::vector<CommandWords> out;
  for (CLI::App* sub : root.get_subcommands([](CLI::App*) { return true; })) {
    CommandWords command{sub->get_name(), sub->get_description(), false, options_of(*sub)};
    for (const CommandEntry& entry : command_registry())
      if (entry.name == command.name) command.takes_program = entry.takes_program;
    out.push_back(std::move(command));
  }
  return out;
}

std::string joined(const std::vector<std::string>& words, const char* separator = " ") {
  std::string out;
  for (const std::string& word : words) out += (out.empty() ? "" : separator) + word;
  return out;
}

// Bash: no bash-completion package needed (compgen and complete only).
std::string bash_script(const std::vector<CommandWords>& commands, const std::vector<OptionWords>& top) {
  std::vector<std::string> names, top_names;
  for (const CommandWords& c : commands) names.push_back(c.name);
  for (const OptionWords& o : top) top_names.insert(top_names.end(), o.names.begin(), o.names.end());
  std::string out =
      "# bash completion for profil, made by `profil completion bash` from its command-line parser.\n"
      "# Load it with: source <(profil completion bash)\n"
      "_profil() {\n"
      "  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} command= at= i\n"
      "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
      "    if [[ ${COMP_WORDS[i]} != -* ]]; then command=${COMP_WORDS[i]} at=$i; break; fi\n"
      "  done\n"
      "  if [[ -z $command ]]; then\n"
      "    if [[ $cur == -* ]]; then COMPREPLY=($(compgen -W '" + joined(top_names) + "' -- \"$cur\"))\n"
      "    else COMPREPLY=($(compgen -W '" + joined(names) + "' -- \"$cur\")); fi\n"
      "    return\n"
      "  fi\n"
      "  local options= valued= values= program=\n"
      "  case $command in\n";
  for (const CommandWords& c : commands) {
    std::vector<std::string> all, valued;
    std::string values;
    for (const OptionWords& o : c.options) {
      all.insert(all.end(), o.names.begin(), o.names.end());
      if (!o.takes_value) continue;
      valued.insert(valued.end(), o.names.begin(), o.names.end());
      if (!o.values.empty()) values += "      " + joined(o.names, "|") + ") values='" + joined(o.values) + "' ;;\n";
    }
    out += "    " + c.name + ")\n      options='" + joined(all) + "'\n      valued=' " + joined(valued) + " '\n";
    if (c.takes_program) out += "      program=1\n";
    if (!values.empty()) out += "      case $prev in\n" + values + "      esac\n";
    out += "      ;;\n";
  }
  out +=
      "    *) return ;;\n"
      "  esac\n"
      "  # A command that runs a program: its options end at \"--\" or at the\n"
      "  # first word that is not one of them (the program, a command name);\n"
      "  # the words after the program are its own (files).\n"
      "  if [[ -n $program ]]; then\n"
      "    for ((i = at + 1; i < COMP_CWORD; i++)); do\n"
      "      if [[ ${COMP_WORDS[i]} == -- ]]; then\n"
      "        if ((i + 1 == COMP_CWORD)); then COMPREPLY=($(compgen -c -- \"$cur\")); else COMPREPLY=($(compgen -f -- \"$cur\")); fi\n"
      "        return\n"
      "      fi\n"
      "      if [[ ${COMP_WORDS[i]} != -* && $valued != *\" ${COMP_WORDS[i-1]} \"* ]]; then\n"
      "        COMPREPLY=($(compgen -f -- \"$cur\"))\n"
      "        return\n"
      "      fi\n"
      "    done\n"
      "  fi\n"
      "  if [[ $valued == *\" $prev \"* ]]; then\n"
      "    if [[ -n $values ]]; then COMPREPLY=($(compgen -W \"$values\" -- \"$cur\"))\n"
      "    else COMPREPLY=($(compgen -f -- \"$cur\")); fi\n"
      "    return\n"
      "  fi\n"
      "  if [[ $cur == -* ]]; then COMPREPLY=($(compgen -W \"$options${program:+ --}\" -- \"$cur\")); return; fi\n"
      "  if [[ -n $program ]]; then COMPREPLY=($(compgen -c -- \"$cur\")); else COMPREPLY=($(compgen -f -- \"$cur\")); fi\n"
      "}\n"
      "complete -o filenames -o bashdefault -F _profil profil\n";
  return out;
}

// Text inside zsh's _arguments specs and _describe entries: brackets,
// colons, quotes and backslashes escaped; one line.
std::string zsh_text(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\n') c = ' ';
    if (c == '\'') {
      out += "'\\''";
      continue;
    }
    if (c == '[' || c == ']' || c == ':' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

std::string zsh_script(const std::vector<CommandWords>& commands, const std::vector<OptionWords>& top) {
  std::string out =
      "#compdef profil\n"
      "# zsh completion for profil, made by `profil completion zsh` from its command-line parser.\n"
      "# Load it with: source <(profil completion zsh), or save it as _profil in a directory of $fpath.\n"
      "_profil() {\n"
      "  local -a commands\n"
      "  commands=(\n";
  for (const CommandWords& c : commands) out += "    '" + zsh_text(c.name) + ":" + zsh_text(c.description) + "'\n";
  out += "  )\n  if (( CURRENT == 2 )); then\n    _describe -t commands 'profil command' commands";
  for (const OptionWords& o : top)
    for (const std::string& name : o.names) out += " -- '" + name + "'";
  out += "\n    return\n  fi\n  local command=$words[2]\n  shift words\n  (( CURRENT-- ))\n  case $command in\n";
  for (const CommandWords& c : commands) {
    out += "    " + c.name + ")\n      _arguments -s -S";
    for (const OptionWords& o : c.options) {
      const std::string exclusive = o.names.size() > 1 ? "'(" + joined(o.names) + ")'{" + joined(o.names, ",") + "}"
                                                       : "'" + o.names.front();
      std::string spec = exclusive + (o.names.size() > 1 ? "'" : "") + "[" + zsh_text(o.description) + "]";
      if (o.takes_value)
        spec += ":value:" + (o.values.empty() ? std::string("_files") : "(" + joined(o.values) + ")");
      out += " \\\n        " + spec + "'";
    }
    out += c.takes_program ? " \\\n        '*::program:_normal'" : " \\\n        '*:file:_files'";
    out += "\n      ;;\n";
  }
  out += "  esac\n}\nif [[ $zsh_eval_context[-1] == loadautofunc ]]; then _profil \"$@\"; else compdef _profil profil; fi\n";
  return out;
}

const RegisterCommand kCompletionCommand(
    "completion", "Print a completion script for bash or zsh (source <(profil completion bash))",
    [](CLI::App& app) -> std::function<int()> {
      auto shell = std::make_shared<std::string>();
      app.add_option("shell", *shell, "bash or zsh")->required()->check(CLI::IsMember({"bash", "zsh"}));
      return [&app, shell]() {
        CLI::App& root = *app.get_parent();
        const std::vector<CommandWords> commands = commands_of(root);
        const std::vector<OptionWords> top = options_of(root);
        const std::string script = *shell == "bash" ? bash_script(commands, top) : zsh_script(commands, top);
        std::fputs(script.c_str(), stdout);
        return std::fflush(stdout) == 0 ? 0 : fail("stdout", "cannot write");
      };
    },
    70);

}  // namespace
}  // namespace profiling::cli
