#include "report/jit_map.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <memory>
#include <set>

#include "format/file_io.h"
#include "report/jitdump.h"

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

void JitMap::add(uint64_t start, uint64_t size, std::string name, int32_t code) {
  if (size == 0 || start + size < start) return;
  entries_.push_back({start, start + size, static_cast<uint32_t>(entries_.size()), std::move(name), code});
  longest_ = std::max(longest_, size);
}

void JitMap::sort() {
  std::sort(entries_.begin(), entries_.end(),
            [](const Entry& a, const Entry& b) { return a.start != b.start ? a.start < b.start : a.order < b.order; });
}

void JitMap::add_perf_map(std::string_view text) {
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    // "START SIZE name": one space between, and the name is the rest of
    // the line, spaces and all ("JS:*hot /tmp/x.js:3:20").
    uint64_t start = 0, size = 0;
    if (!parse_hex(&line, &start) || !line.starts_with(' ')) continue;
    line.remove_prefix(1);
    if (!parse_hex(&line, &size) || !line.starts_with(' ')) continue;
    line.remove_prefix(1);
    if (line.ends_with('\r')) line.remove_suffix(1);
    add(start, size, std::string(line), -1);
  }
  sort();
}

void JitMap::add_jitdump(Jitdump dump) {
  const auto file_base = static_cast<uint32_t>(files_.size());
  files_.insert(files_.end(), std::make_move_iterator(dump.files.begin()), std::make_move_iterator(dump.files.end()));
  for (JitCode& code : dump.codes) {
    int32_t lines = -1;
    if (!code.lines.empty()) {
      for (JitLine& line : code.lines) line.file += file_base;
      lines = static_cast<int32_t>(codes_.size());
      codes_.push_back(std::move(code.lines));
    }
    add(code.start, code.size, std::move(code.name), lines);
  }
  sort();
}

std::optional<format::Frame> JitMap::lookup(uint64_t address, bool* ambiguous) const {
  // Candidates start at most longest_ bytes before address; every one
  // covering it counts, in the order written.
  auto it = std::upper_bound(entries_.begin(), entries_.end(), address,
                             [](uint64_t a, const Entry& e) { return a < e.start; });
  std::vector<const Entry*> covering;
  while (it != entries_.begin()) {
    --it;
    if (address - it->start >= longest_) break;
    if (address < it->end) covering.push_back(&*it);
  }
  if (ambiguous) *ambiguous = false;
  if (covering.empty()) return std::nullopt;
  std::sort(covering.begin(), covering.end(), [](const Entry* a, const Entry* b) { return a->order < b->order; });
  std::vector<std::string_view> names;  // distinct: the same code written again is not a second name
  const Entry* with_lines = nullptr;
  for (const Entry* e : covering) {
    if (std::find(names.begin(), names.end(), e->name) == names.end()) names.push_back(e->name);
    if (e->code >= 0 && with_lines == nullptr) with_lines = e;
  }
  if (ambiguous) *ambiguous = names.size() > 1;
  std::string name(names.front());
  for (size_t i = 1; i < names.size(); ++i) (name += " | ") += names[i];
  format::Frame frame{name, name, "", 0};
  // Its line: the last of the code's lines at or before address.
  if (names.size() == 1 && with_lines != nullptr) {
    const std::vector<JitLine>& lines = codes_[static_cast<size_t>(with_lines->code)];
    auto line = std::upper_bound(lines.begin(), lines.end(), address,
                                 [](uint64_t a, const JitLine& l) { return a < l.address; });
    if (line != lines.begin()) {
      --line;
      frame.file = files_[line->file];
      frame.line = line->line;
    }
  }
  return frame;
}

std::string jit_map_name(int64_t pid) { return "perf-" + std::to_string(pid) + ".map"; }

bool is_anonymous_code(const std::string& path) {
  return path.empty() || path == "[anon]" || path == "//anon" || path.starts_with("[anon:") || path == kJitObject;
}

int64_t began_ns(const format::Profile& profile) {
  return profile.process_start_ns != 0 ? profile.process_start_ns : profile.time_nanos;
}

namespace {

// Whether st, a file in /tmp, was last written since the process began
// (else an earlier process of the same pid left it: pids are reused, 32768
// of them here). A file's time is the kernel's coarse clock, up to a tick
// behind: 20 ms of grace.
bool written_since(const struct stat& st, int64_t began) {
  const int64_t written_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  return began == 0 || written_ns + 20'000'000 >= began;
}

// A JIT file of pid at path that may be read: a regular file of ours or
// root's (perf asks the same: anyone can write in /tmp); in /tmp only one
// written_since the process began.
bool readable_jit_file(const std::string& path, bool in_tmp, int64_t began, std::string* bytes) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  if (st.st_uid != ::geteuid() && st.st_uid != 0) return false;
  if (in_tmp && !written_since(st, began)) return false;
  std::string problem;
  return format::try_read_file(path, bytes, &problem, format::kMaxInputSize, /*follow_symlinks=*/false);
}

// A jitdump of pid's, its header naming it.
bool parse_jitdump_of(int64_t pid, std::string_view bytes, Jitdump* dump) {
  std::string problem;
  return parse_jitdump(bytes, dump, &problem) && dump->pid == static_cast<uint32_t>(pid);
}

// The map and jitdump of pid from the first of dirs that has either;
// nullptr when none does.
std::unique_ptr<JitMap> load_map(int64_t pid, const std::vector<std::string>& dirs, int64_t began) {
  for (const std::string& dir : dirs) {
    std::unique_ptr<JitMap> map;
    std::string bytes;
    if (readable_jit_file(dir + "/" + jit_map_name(pid), dir == "/tmp", began, &bytes))
      map = std::make_unique<JitMap>(bytes);
    Jitdump dump;
    if (readable_jit_file(dir + "/" + jitdump_name(pid), dir == "/tmp", began, &bytes) &&
        parse_jitdump_of(pid, bytes, &dump)) {
      if (!map) map = std::make_unique<JitMap>();
      map->add_jitdump(std::move(dump));
    }
    if (map) return map;
  }
  return nullptr;
}

}  // namespace

size_t name_jit_code(format::Profile* profile, const std::vector<std::string>& dirs, size_t* ambiguous) {
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
  if (ambiguous) *ambiguous = 0;
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
    bool several = false;
    std::optional<format::Frame> found = map ? map->lookup(address, &several) : std::nullopt;
    if (!found) return;
    profile->frames[address] = {std::move(*found)};
    if (several && ambiguous) ++*ambiguous;
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

bool merge_jit_map(int64_t pid, int64_t began, const std::string& dir, std::string* problem) {
  std::string fresh;
  if (pid <= 0 || !readable_jit_file("/tmp/" + jit_map_name(pid), true, began, &fresh)) return true;
  const std::string to = dir + "/" + jit_map_name(pid);
  // dir's copy, when it is this process's (a run's directory used again
  // may hold another process's of the same pid).
  std::string kept;
  if (!readable_jit_file(to, true, began, &kept)) kept.clear();
  if (kept == fresh) return true;
  std::set<std::string_view> have;
  for (std::string_view text = kept; !text.empty();) {
    const size_t eol = text.find('\n');
    have.insert(text.substr(0, eol));
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
  }
  std::string merged = kept;
  if (!merged.empty() && merged.back() != '\n') merged += '\n';
  for (std::string_view text = fresh; !text.empty();) {
    const size_t eol = text.find('\n');
    const std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    if (!line.empty() && !have.count(line)) (merged += line) += '\n';
  }
  if (merged == kept) return true;
  if (!format::try_write_file_atomically(to, merged, problem)) {
    *problem = to + ": " + *problem;
    return false;
  }
  return true;
}

bool keep_jit_map(const format::Profile& profile, const std::string& dir, std::string* problem) {
  if (profile.pid <= 0) return true;
  const int64_t began = began_ns(profile);
  if (!merge_jit_map(profile.pid, began, dir, problem)) return false;
  // The jitdump: where its mapping says, else in the current directory.
  const std::string name = jitdump_name(profile.pid);
  std::vector<std::string> candidates;
  for (const format::Mapping& m : profile.mappings)
    if (m.path.size() > name.size() && m.path.ends_with("/" + name)) candidates.push_back(m.path);
  candidates.push_back("./" + name);
  const std::string to = dir + "/" + name;
  for (const std::string& from : candidates) {
    std::string bytes;
    Jitdump dump;
    struct stat here, there;
    if (::stat(from.c_str(), &here) == 0 && ::stat(to.c_str(), &there) == 0 && here.st_ino == there.st_ino &&
        here.st_dev == there.st_dev)
      return true;  // the program wrote it in dir itself
    // Any directory is as open as /tmp: the same rule of time.
    if (!readable_jit_file(from, true, began, &bytes) || !parse_jitdump_of(profile.pid, bytes, &dump)) continue;
    if (!format::try_write_file_atomically(to, bytes, problem)) {
      *problem = to + ": " + *problem;
      return false;
    }
    return true;
  }
  return true;
}

}  // namespace profiling::report
