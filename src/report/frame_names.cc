#include "report/frame_names.h"

#include <string>

namespace profiling::report {

std::string drop_symbol_version(std::string_view name) {
  // ELF symbol versioning (GNU "name@VERSION", default "name@@VERSION"):
  // the version says which ABI the symbol belongs to, not what ran, and
  // splits one function into two names across binaries.
  const size_t at = name.find('@');
  if (at == 0 || at == std::string_view::npos) return std::string(name);
  const std::string_view version = name.substr(name[at + 1] == '@' ? at + 2 : at + 1);
  if (version.empty() || version.find_first_of(" ()<>,:") != std::string_view::npos) return std::string(name);
  return std::string(name.substr(0, at));
}

std::string thread_label(const std::string& name, int32_t tid) {
  if (tid == 0) return "[unknown thread]";
  return (name.empty() ? std::string("thread") : name) + " " + std::to_string(tid);
}

std::string process_label(const std::string& name, int64_t pid) {
  if (pid == 0) return "[unknown process]";
  return (name.empty() ? std::string("process") : name) + " " + std::to_string(pid);
}

namespace {

size_t code_points(std::string_view text) {
  size_t n = 0;
  for (unsigned char c : text)
    if ((c & 0xc0) != 0x80) ++n;
  return n;
}

// Template arguments and parameter lists out of a demangled C++ name, as
// pprof's ShortenFunctionName: what is left names the function. An
// operator's own characters ("operator<<", "operator()") and
// "(anonymous namespace)" are kept.
std::string elide_arguments(const std::string& name) {
  std::string out;
  int depth = 0;
  for (size_t i = 0; i < name.size(); ++i) {
    if (depth == 0 && name.compare(i, 8, "operator") == 0) {
      size_t end = i + 8;
      if (name.compare(end, 2, "()") == 0 || name.compare(end, 2, "[]") == 0) {
        end += 2;
      } else {
        while (end < name.size() && std::string_view("<>=+-*/%&|^!~,").find(name[end]) != std::string_view::npos)
          ++end;
      }
      out.append(name, i, end - i);
      i = end - 1;
      continue;
    }
    if (depth == 0 && name.compare(i, 21, "(anonymous namespace)") == 0) {
      out += "(anonymous namespace)";
      i += 20;
      continue;
    }
    const char c = name[i];
    if (c == '<' || c == '(') {
      ++depth;
    } else if ((c == '>' || c == ')') && depth > 0) {
      --depth;
    } else if (depth == 0) {
      out += c;
    }
  }
  // "f(int) const" leaves "f const"; the qualifier alone says nothing.
  for (std::string_view tail : {" const", " volatile", " &&", " &"})
    if (out.size() > tail.size() && out.compare(out.size() - tail.size(), tail.size(), tail) == 0)
      out.resize(out.size() - tail.size());
  return out.empty() ? name : out;
}

}  // namespace

std::string shorten_name(const std::string& name, size_t width) {
  if (code_points(name) <= width) return name;
  std::string shorter = elide_arguments(name);
  if (code_points(shorter) <= width || width < 2) return shorter;
  // The end names the function; the start (namespaces) gives way.
  size_t keep = width - 1, start = shorter.size();
  while (start > 0 && keep > 0) {
    --start;
    if ((static_cast<unsigned char>(shorter[start]) & 0xc0) != 0x80) --keep;
  }
  return "…" + shorter.substr(start);
}

}  // namespace profiling::report
