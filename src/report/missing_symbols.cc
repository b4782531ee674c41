#include "report/missing_symbols.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>

#include <fmt/format.h>

#include "report/child_output.h"

namespace profiling::report {

std::string debian_package_of(const std::string& path) {
  std::vector<std::string> candidates = {path};
  if (char* real = realpath(path.c_str(), nullptr)) {
    if (real != path) candidates.emplace_back(real);
    std::free(real);
  }
  for (size_t i = 0, n = candidates.size(); i < n; ++i) {
    const std::string& c = candidates[i];
    candidates.push_back(c.starts_with("/usr/") ? c.substr(4) : "/usr" + c);
  }
  // One dpkg for every spelling of the path (dpkg-query(1) -S takes
  // several patterns): each run reads the whole package database, 0.26 s
  // of CPU here, and a library under usrmerge is found only by its
  // second or third spelling. Exit status 1 when some pattern matched
  // nothing: the lines of those that did are still printed.
  std::vector<std::string> args = {"dpkg", "-S"};
  args.insert(args.end(), candidates.begin(), candidates.end());
  std::string out;
  child_output(args, &out);
  size_t start = 0;
  while (start < out.size()) {
    size_t end = out.find('\n', start);
    if (end == std::string::npos) end = out.size();
    const std::string line = out.substr(start, end - start);
    start = end + 1;
    // "xz-utils: /usr/bin/xz"; "libc6:amd64: /lib/x86_64-linux-gnu/libc.so.6"
    // (a Multi-Arch package); "diversion by ...", several packages
    // ("a, b: /path") for a shared directory: not an answer.
    const size_t colon = line.find(": ");
    if (colon == std::string::npos || line.starts_with("diversion") || line.find(", ") < colon) continue;
    std::string package = line.substr(0, colon);
    return package.substr(0, package.find(':'));
  }
  return {};
}

std::vector<std::string> missing_symbol_hints(const SymbolizedProfile& symbolized,
                                              const std::function<std::string(const std::string&)>& package_of) {
  struct Counts {
    const format::Mapping* mapping = nullptr;
    uint64_t unnamed = 0, all = 0;
  };
  std::map<std::pair<std::string, std::string>, Counts> objects;  // (path, build id)
  for (const SymbolizedSample& s : symbolized.samples) {
    // Pseudo objects ([vdso], [anon], [jit]) have no debug file to get.
    if (s.mapping == nullptr || s.mapping->path.empty() || s.mapping->path[0] != '/') continue;
    Counts& c = objects[{s.mapping->path, s.mapping->build_id}];
    c.mapping = s.mapping;
    c.all += s.count;
    if (!s.symbol.known && !s.symbol.from_profile) c.unnamed += s.count;
  }
  std::vector<std::pair<uint64_t, std::string>> hints;
  for (const auto& [key, c] : objects) {
    // Mostly unnamed, and enough of the profile to matter (an object with
    // 2 samples of 10,000 is not worth an install).
    if (c.unnamed * 2 <= c.all || static_cast<double>(c.unnamed) < 0.01 * static_cast<double>(symbolized.total))
      continue;
    const std::string& path = key.first;
    if (access(path.c_str(), R_OK) != 0) continue;  // the symbolizer's warning says why
    const std::string build_id = !key.second.empty() ? key.second : read_build_id(path);
    const std::string package = package_of(path);
    std::string where;
    if (!package.empty()) where = fmt::format("the package {}-dbgsym (Debian's debug archive)", package);
    if (!build_id.empty()) where += fmt::format("{}a debuginfod server (DEBUGINFOD_URLS)", where.empty() ? "" : " or ");
    if (where.empty()) where = "a build of it that was not stripped (it has no build id to find a debug file by)";
    const double percent = 100.0 * static_cast<double>(c.unnamed) / static_cast<double>(c.all);
    hints.emplace_back(c.unnamed, fmt::format("{}{}: {:.0f}% of its {} samples have no function name; {} would name them",
                                              path, build_id.empty() ? "" : " (build id " + build_id + ")", percent,
                                              c.all, where));
  }
  std::stable_sort(hints.begin(), hints.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::string> out;
  for (auto& [count, text] : hints) out.push_back(std::move(text));
  return out;
}

}  // namespace profiling::report
