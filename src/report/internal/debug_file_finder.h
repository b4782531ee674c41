// Finding the separate debug file of one object for libdwfl, as gdb
// documents the search ("Separate Debug Files"): <debug root>/.build-id/
// xx/yyyy.debug, then .gnu_debuglink next to the object, in its .debug/
// directory and under the debug root, then, with DEBUGINFOD_URLS, the
// debuginfod servers (debuginfod.h, with its progress line). A compressed
// debug file found is read through its uncompressed copy where one is kept
// (debug_file_cache.h).
//
// One finder per object (per Dwfl), owned by its ElfObject (elf_object.h);
// not thread-safe, as libdwfl is not for one Dwfl. libdwfl keeps pointers
// to the callbacks and the search path held here: the finder must outlive
// its Dwfl and never move (it cannot be copied or moved). It caches nothing
// but the path of the uncompressed copy it opened (debug_copy). Host side
// only: allocates.
#ifndef PROFIL_REPORT_INTERNAL_DEBUG_FILE_FINDER_H
#define PROFIL_REPORT_INTERNAL_DEBUG_FILE_FINDER_H

#include <elfutils/libdwfl.h>

#include <string>

#include "report/debuginfod.h"

namespace profiling::report::internal {

// The GNU build id libdwfl read from module's object, lowercase hex; "" when
// it has none.
std::string module_build_id(Dwfl_Module* module);

class DebugFileFinder {
 public:
  // debug_root: where distribution debug files live (/usr/lib/debug).
  // copy_debug_files: make the uncompressed copy of a compressed debug file
  // that has none yet (debug_file_cache.h); one made before is read either
  // way.
  DebugFileFinder(std::string debug_root, bool copy_debug_files);
  DebugFileFinder(const DebugFileFinder&) = delete;
  DebugFileFinder& operator=(const DebugFileFinder&) = delete;

  // For dwfl_begin.
  const Dwfl_Callbacks* callbacks() const { return &callbacks_; }
  // After dwfl_begin: debuginfod lookups of dwfl print their progress line.
  void attach(Dwfl* dwfl) { debuginfod_.attach(dwfl); }
  // After dwfl_report_elf: libdwfl's search for module's debug file comes
  // here (the module's user data is this finder).
  void adopt(Dwfl_Module* module);

  // The debug file of a program that is gone, by the build id id the
  // profile recorded: installed under the debug root, else from the
  // debuginfod servers. A descriptor (-1 when none has it) and *found, the
  // file's path; path names the program in the progress line.
  int open_by_build_id(const std::string& path, const std::string& id, std::string* found);

  // The uncompressed copy read in place of the debug file, or "".
  const std::string& debug_copy() const { return debug_copy_; }

 private:
  static int find_debuginfo(Dwfl_Module* module, void** user_data, const char* module_name, Dwarf_Addr base,
                            const char* file_name, const char* debug_link, GElf_Word debug_link_crc,
                            char** debug_file_name);
  int uncompressed(int fd, const char* name);
  int open_debug_link(const std::string& path, const std::string& link, const std::string& build_id,
                      char** found) const;
  int open_installed_debug_file(const std::string& id, std::string* found);

  std::string debug_root_;
  bool copy_debug_files_;
  // libdwfl's debug-file search path (dwfl_standard_find_debuginfo, as
  // gdb's "Separate Debug Files"): the object's directory, its .debug/
  // subdirectory, and the debug root, under which it looks for
  // .build-id/xx/yyyy.debug and then the object's own directory.
  std::string debuginfo_path_;
  char* debuginfo_path_pointer_ = nullptr;
  Dwfl_Callbacks callbacks_{};
  DebuginfodLookup debuginfod_;
  std::string debug_copy_;
};

}  // namespace profiling::report::internal

#endif  // PROFIL_REPORT_INTERNAL_DEBUG_FILE_FINDER_H
