// Debug files from debuginfod servers (DEBUGINFOD_URLS), as gdb, valgrind,
// perf and elfutils' own tools fetch them: libdwfl asks libdebuginfod when
// no debug file is installed (dwfl_standard_find_debuginfo), and its cache
// ($DEBUGINFOD_CACHE_PATH, else ~/.cache/debuginfod_client) keeps what it
// got. This file adds what profil says while that happens: one progress
// line on stderr per object looked up (debuginfod_set_progressfn(3)).
#ifndef PROFIL_REPORT_DEBUGINFOD_H
#define PROFIL_REPORT_DEBUGINFOD_H

#include <elfutils/libdwfl.h>

#include <string>

namespace profiling::report {

// True when DEBUGINFOD_URLS names at least one server.
bool debuginfod_enabled();

// One object's lookups through the debuginfod client of its Dwfl. Does
// nothing without DEBUGINFOD_URLS. Must outlive the Dwfl's lookups.
class DebuginfodLookup {
 public:
  // Gives dwfl's client (dwfl_get_debuginfod_client) the progress line.
  void attach(Dwfl* dwfl);
  // Whether attach found servers to ask.
  bool enabled() const { return client_ != nullptr; }
  // Around a lookup for object: the line (if one was started) ends with
  // what became of it (found is the lookup's result).
  void begin(const std::string& object);
  void end(bool found);
  // The debug file of a build id straight from the servers (a program no
  // longer on disk); -1 when none has it. *path: where the cache keeps it.
  int find_debuginfo(const std::string& object, const std::string& build_id, std::string* path);

 private:
  static int progress(debuginfod_client* client, long done, long total);

  debuginfod_client* client_ = nullptr;
  std::string object_;
  bool printed_ = false;
  long last_done_ = -1;
};

}  // namespace profiling::report

#endif  // PROFIL_REPORT_DEBUGINFOD_H
