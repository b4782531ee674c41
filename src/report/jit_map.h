// Names for code a JIT compiler wrote into anonymous memory, from what it
// writes beside: the map file /tmp/perf-PID.map, lines "START SIZE name"
// (hex, with or without 0x), the convention perf reads (tools/perf/
// Documentation/jit-interface.txt) and V8 (node --perf-basic-prof), the
// JVM (jcmd PID Compiler.perfmap), .NET (DOTNET_PerfMapEnabled) and Python
// 3.12 (-X perf) write; and the jitdump jit-PID.dump (node --perf-prof,
// jitdump.h), which V8 writes in the program's working directory and maps
// (executable, one page) so that perf's records show where: its mapping in
// the profile says where to look. A jitdump also gives source lines.
//
// Code freed and its memory reused during the window (issue 34): a map has
// no times, and the samples carry none yet to hold against a jitdump's, so
// an address that two different names cover may be either: it is named
// "first | second" (in the order written), never the later alone, and
// counted as ambiguous.
//
// The files outlive the process in /tmp (or its working directory) only
// until cleaned and a pid is reused, so `profil run` copies them into its
// output directory when it converts the process's profile (tools/profil/
// run_convert.cc), merging the map with what an earlier copy kept (a JVM
// asked several times writes only the code it holds at each ask: profil run
// --jit, tools/profil/jit_ask.h), and reports look beside the profile first.
//
// NOT async-signal-safe: host side.
#ifndef PROFIL_REPORT_JIT_MAP_H
#define PROFIL_REPORT_JIT_MAP_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "format/profile.h"
#include "report/jitdump.h"

namespace profiling::report {

// What a mapping of JIT code is called once named from a map file.
inline constexpr const char* kJitObject = "[jit]";

class JitMap {
 public:
  JitMap() = default;
  // A perf map's text; lines that do not parse (and empty ranges) are
  // skipped, as perf does.
  explicit JitMap(std::string_view perf_map) { add_perf_map(perf_map); }
  void add_perf_map(std::string_view text);
  void add_jitdump(Jitdump dump);
  // The frame of the code at address (its name; its file and line where a
  // jitdump gave lines), nullopt when nothing covers it. Different names
  // covering it: "a | b", no line, and *ambiguous set.
  std::optional<format::Frame> lookup(uint64_t address, bool* ambiguous = nullptr) const;
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    uint64_t start, end;
    uint32_t order;  // as written: maps, then jitdumps, as added
    std::string name;
    int32_t code = -1;  // its lines: codes_[code], from a jitdump
  };
  void add(uint64_t start, uint64_t size, std::string name, int32_t code);
  void sort();
  std::vector<Entry> entries_;  // by start, then order
  std::vector<std::vector<JitLine>> codes_;
  std::vector<std::string> files_;
  uint64_t longest_ = 0;  // the largest end - start: how far back a lookup looks
};

// "perf-PID.map".
std::string jit_map_name(int64_t pid);
// Memory without a file, where a JIT puts its code: "" (/proc/PID/maps),
// "[anon]" (profraw), "//anon" (perf's mmap records), "[anon:NAME]"
// (prctl PR_SET_VMA_ANON_NAME), and kJitObject.
bool is_anonymous_code(const std::string& mapping_path);

// Names the addresses of profile (samples and their callers) that lie in
// anonymous code, or in no mapping (the JIT unmapped it before the maps
// were read), and carry no frames yet: for each process (Sample::pid, else
// Profile::pid) the first of dirs holding its perf-PID.map or jit-PID.dump
// (both read when both are there), each address its code's frame in
// Profile::frames, which every view, export and merge then shows. The
// mappings that hold one are renamed kJitObject; named addresses in no
// mapping get kJitObject mappings of their own. A file in "/tmp" is used
// only if written since the process began (began_ns; older ones are
// another process's of the same pid), a jitdump only if its header names
// the pid. Returns how many addresses were named; *ambiguous (when given)
// how many of them by several names.
size_t name_jit_code(format::Profile* profile, const std::vector<std::string>& dirs, size_t* ambiguous = nullptr);

// Keeps the profile's process's JIT files in dir (atomically: a report
// reading them sees all or none), those written since it began: the lines
// of /tmp/perf-PID.map added to dir's copy (merge_jit_map), and its
// jit-PID.dump copied, found by its mapping in the profile (V8 maps it) or
// in the current directory (where profil run started the program). false,
// with *problem, when one could not be kept; true otherwise (also when
// there were none).
bool keep_jit_map(const format::Profile& profile, const std::string& dir, std::string* problem);

// dir/perf-PID.map becomes itself (when written since began_ns, else
// nothing) followed by the lines of /tmp/perf-PID.map it lacks, when that
// one was written since began_ns: a JIT that writes only the code it holds
// now (a JVM asked for its map) keeps in dir the code of every ask. true,
// also when there was nothing to add; false with *problem.
bool merge_jit_map(int64_t pid, int64_t began_ns, const std::string& dir, std::string* problem);

// When the profile's process began (Profile::process_start_ns), or when the
// profile did where that is unknown (a file read back).
int64_t began_ns(const format::Profile& profile);

}  // namespace profiling::report

#endif  // PROFIL_REPORT_JIT_MAP_H
