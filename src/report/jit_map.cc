#include "report/jit_map.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <memory>
#include <set>

#include "format/file_io.h"

namespace profiling::report {

namespace {

// A hex number with or without "0x", then the rest of the text.
bool parse_hex(std::string_view* text, uint64_t* out) {
  std::string_view t = *text;
  if (t.starts_with("0x") || t.starts_with("0X")) t.remove_prefix(2);
  const auto [end, error] = std::from_chars(t.data(), t.data() + t.size(), *out, 16);
  if (error != std::errc() || end == t.data()) return false;
  text->remove_prefix(static_cast<size_t>(end - text->data()));
  return true;
}

}  // namespace

JitMap::JitMap(std::string_view text) {
  uint32_t line_number = 0;
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    ++line_number;
    // "START SIZE name": one space between, and the name is the rest of
    // the line, spaces and all ("JS:*hot /tmp/x.js:3:20").
    uint64_t start = 0, size = 0;
    if (!parse_hex(&line, &start) || !line.starts_with(' ')) continue;
    line.remove_prefix(1);
    if (!parse_hex(&line, &size) || !line.starts_with(' ') || size == 0 || start + size < start) continue;
    line.remove_prefix(1);
    if (line.ends_with('\r')) line.remove_suffix(1);
    entries_.push_back({start, start + size, line_number, std::string(line)});
    longest_ = std::max(longest_, size);
  }
  std::stable_sort(entries_.begin(), entries_.end(), [](const Entry& a, const Entry& b) { return a.start < b.start; });
}

const std::string* JitMap::lookup(uint64_t address) const {
  // Candidates start at most longest_ bytes before address; among those
  // covering it the latest line wins.
  auto it = std::upper_bound(entries_.begin(), entries_.end(), address,
                             [](uint64_t a, const Entry& e) { return a < e.start; });
  const Entry* best = nullptr;
  while (it != entries_.begin()) {
    --it;
    if (address - it->start >= longest_) break;
    if (address < it->end && (!best || it->line > best->line)) best = &*it;
  }
  return best ? &best->name : nullptr;
}

std::string jit_map_name(int64_t pid) { return "perf-" + std::to_string(pid) + ".map"; }

bool is_anonymous_code(const std::string& path) {
  return path.empty() || path == "[anon]" || path == "//anon" || path.starts_with("[anon:") || path == kJitObject;
}

int64_t began_ns(const format::Profile& profile) {
  return profile.process_start_ns != 0 ? profile.process_start_ns : profile.time_nanos;
}

namespace {

// Whether st, a /tmp/perf-PID.map, can be this process's: a regular file
// of ours or root's (perf asks the same: anyone can write in /tmp), last
// written since the process began (else an earlier process of the same pid
// left it: pids are reused, 32768 of them here). A file's time is the
// kernel's coarse clock, up to a tick behind: 20 ms of grace.
bool may_be_this_processes(const struct stat& st, int64_t began) {
  if (!S_ISREG(st.st_mode) || (st.st_uid != ::geteuid() && st.st_uid != 0)) return false;
  const int64_t written_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  return began == 0 || written_ns + 20'000'000 >= began;
}

// The map of pid from the first of dirs that has one; nullptr when none.
// In /tmp, only one may_be_this_processes.
std::unique_ptr<JitMap> load_map(int64_t pid, const std::vector<std::string>& dirs, int64_t began) {
  for (const std::string& dir : dirs) {
    const std::string path = dir + "/" + jit_map_name(pid);
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (st.st_uid != ::geteuid() && st.st_uid != 0) continue;
    if (dir == "/tmp" && !may_be_this_processes(st, began)) continue;
    std::string bytes, problem;
    if (!format::try_read_file(path, &bytes, &problem, format::kMaxInputSize, /*follow_symlinks=*/false)) continue;
    return std::make_unique<JitMap>(bytes);
  }
  return nullptr;
}

}  // namespace

size_t name_jit_code(format::Profile* profile, const std::vector<std::string>& dirs) {
  // The maps of the profile's processes; none (the common case): done.
  std::map<int64_t, std::unique_ptr<JitMap>> maps;
  auto pid_of = [&](const format::Sample& s) -> int64_t { return s.pid != 0 ? s.pid : profile->pid; };
  bool any = false;
  for (const format::Sample& sample : profile->samples) {
    const int64_t pid = pid_of(sample);
    if (pid <= 0) continue;
    auto [it, inserted] = maps.try_emplace(pid);
    if (inserted) it->second = load_map(pid, dirs, began_ns(*profile));
    any = any || it->second != nullptr;
  }
  if (!any) return 0;
  // Code in anonymous memory, or in no mapping at all: a JIT may have
  // unmapped its code before the process wrote its maps (node frees its
  // heap before exit, where the preload's dump copies /proc/self/maps).
  std::vector<format::Mapping*> by_start;
  for (format::Mapping& m : profile->mappings) by_start.push_back(&m);
  std::sort(by_start.begin(), by_start.end(),
            [](const format::Mapping* a, const format::Mapping* b) { return a->start < b->start; });
  auto mapping_of = [&](uint64_t address) -> format::Mapping* {
    auto it = std::upper_bound(by_start.begin(), by_start.end(), address,
                               [](uint64_t a, const format::Mapping* m) { return a < m->start; });
    return it != by_start.begin() && (*(it - 1))->contains(address) ? *(it - 1) : nullptr;
  };
  std::vector<uint64_t> unmapped;  // named addresses no mapping holds
  size_t named = 0;
  auto name = [&](int64_t pid, uint64_t address) {
    // User-space addresses only (format/profile.h puts its own above).
    if (address >= 0x0000'8000'0000'0000 || profile->frames.count(address)) return;
    format::Mapping* mapping = mapping_of(address);
    if (mapping != nullptr && !is_anonymous_code(mapping->path)) return;
    const JitMap* map = maps[pid].get();
    const std::string* found = map ? map->lookup(address) : nullptr;
    if (found == nullptr) return;
    profile->frames[address] = {format::Frame{*found, *found, "", 0}};
    if (mapping != nullptr)
      mapping->path = kJitObject;
    else
      unmapped.push_back(address);
    ++named;
  };
  // Each (process, chain) once: samples share their callers' chains, and
  // walking every sample's whole chain was 5 % of a node report's CPU.
  std::set<std::pair<int64_t, uint32_t>> chains_named;
  for (const format::Sample& sample : profile->samples) {
    const int64_t pid = pid_of(sample);
    if (pid <= 0) continue;
    name(pid, sample.address);
    if (sample.stack != format::StackTable::kNoCallers && chains_named.emplace(pid, sample.stack).second)
      for (const uint64_t caller : profile->stacks.callers(sample.stack)) name(pid, caller);
  }
  // Mappings named kJitObject for the unmapped ones, each as wide as it can
  // be without reaching another mapping, so that they are few.
  std::sort(unmapped.begin(), unmapped.end());
  std::vector<format::Mapping> added;
  for (const uint64_t address : unmapped) {
    if (!added.empty()) {
      format::Mapping& last = added.back();
      auto next = std::upper_bound(by_start.begin(), by_start.end(), last.start,
                                   [](uint64_t a, const format::Mapping* m) { return a < m->start; });
      if (next == by_start.end() || (*next)->start > address) {
        last.limit = address + 1;
        continue;
      }
    }
    added.push_back({address, address + 1, 0, kJitObject, ""});
  }
  profile->mappings.insert(profile->mappings.end(), added.begin(), added.end());
  return named;
}

bool keep_jit_map(const format::Profile& profile, const std::string& dir, std::string* problem) {
  const std::string from = "/tmp/" + jit_map_name(profile.pid);
  struct stat st;
  if (profile.pid <= 0 || ::lstat(from.c_str(), &st) != 0) return true;
  if (!may_be_this_processes(st, began_ns(profile))) return true;  // not one we would read
  std::string bytes;
  if (!format::try_read_file(from, &bytes, problem, format::kMaxInputSize, /*follow_symlinks=*/false)) {
    *problem = from + ": " + *problem;
    return false;
  }
  const std::string to = dir + "/" + jit_map_name(profile.pid);
  if (!format::try_write_file_atomically(to, bytes, problem)) {
    *problem = to + ": " + *problem;
    return false;
  }
  return true;
}

}  // namespace profiling::report
