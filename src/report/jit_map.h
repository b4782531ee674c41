// Names for code a JIT compiler wrote into anonymous memory, from the map
// file it keeps beside: /tmp/perf-PID.map, lines "START SIZE name" (hex,
// with or without 0x), the convention perf reads (tools/perf/Documentation/
// jit-interface.txt) and V8 (node --perf-basic-prof), the JVM's
// perf-map-agent, .NET (DOTNET_PerfMapEnabled) and Python 3.12 (-X perf)
// write. A later line for the same addresses wins: the JIT reused the
// memory for other code.
//
// The file outlives the process in /tmp only until /tmp is cleaned and a
// pid is reused, so `profil run` copies it into its output directory when
// it converts the process's profile (tools/profil/run_convert.cc), and
// reports look beside the profile first.
#ifndef PROFIL_REPORT_JIT_MAP_H
#define PROFIL_REPORT_JIT_MAP_H

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "format/profile.h"

namespace profiling::report {

// What a mapping of JIT code is called once named from a map file.
inline constexpr const char* kJitObject = "[jit]";

class JitMap {
 public:
  // Lines that do not parse (and empty ranges) are skipped, as perf does.
  explicit JitMap(std::string_view text);
  // The name of the code at address, nullptr when no line covers it.
  const std::string* lookup(uint64_t address) const;
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    uint64_t start, end;
    uint32_t line;  // later lines win
    std::string name;
  };
  std::vector<Entry> entries_;  // by start
  uint64_t longest_ = 0;        // the largest end - start: how far back a lookup looks
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
// Profile::pid) the first dirs[i]/perf-PID.map that exists, each address
// its line's name as a frame of Profile::frames, which every view, export
// and merge then shows. The mappings that hold one are renamed kJitObject;
// named addresses in no mapping get kJitObject mappings of their own. A map in "/tmp" is used only if written since the process
// began (began_ns; older ones are another process's of the same pid).
// Returns how many addresses were named.
size_t name_jit_code(format::Profile* profile, const std::vector<std::string>& dirs);

// Copies the profile's process's /tmp/perf-PID.map into dir (atomically: a
// report reading it sees all of it or none), when it has one written since
// it began. false, with *problem, when it could not be copied; true
// otherwise (also when there was none).
bool keep_jit_map(const format::Profile& profile, const std::string& dir, std::string* problem);

// When the profile's process began (Profile::process_start_ns), or when the
// profile did where that is unknown (a file read back).
int64_t began_ns(const format::Profile& profile);

}  // namespace profiling::report

#endif  // PROFIL_REPORT_JIT_MAP_H
