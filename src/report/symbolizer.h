// Runtime addresses -> (object, function, source lines), on elfutils'
// libdwfl: every object is one libdwfl module (cached by path + build id)
// reported at its link-time addresses; the runtime address is turned into
// the object's link-time address through the mapping (start, file_offset)
// and the object's PT_LOAD program headers (elf(5)), which is correct for
// non-PIE executables, PIE and shared libraries alike.
//
// libdwfl chooses the symbol table (the object's .symtab, its debug file's,
// else .dynsym with the MiniDebugInfo of .gnu_debugdata) and finds separate
// debug files as gdb documents them ("Separate Debug Files"):
// <debug root>/.build-id/xx/yyyy.debug, then .gnu_debuglink next to the
// object, in its .debug/ directory and under the debug root, then the
// debuginfod servers of DEBUGINFOD_URLS (debuginfod.h). The functions are
// sorted once per object and each address is one binary search; DWARF
// (lines, inline frames) is read only when first asked for.
//
// This is the facade; each job is a room of src/report/internal/: the
// object and its addresses (elf_object.h), its symbol table
// (symbol_table.h), its DWARF lines and inline frames (module_dwarf.h,
// scope_tree.h), its debug file (debug_file_finder.h), opening ELF files
// (elf_file.h). A Symbolizer is not thread-safe (libdwfl does not lock a
// Dwfl): one per thread. It owns the objects it opened and keeps them, with
// all they read, until it is destroyed. Host side only: allocates.
#ifndef PROFIL_REPORT_SYMBOLIZER_H
#define PROFIL_REPORT_SYMBOLIZER_H

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "format/profile.h"
#include "report/demangle.h"  // demangle(), which the symbolizer names functions with
#include "report/unnamed_code.h"

namespace profiling::report {

inline constexpr const char* kUnknownFunction = "[unknown]";

struct SourceLine {
  std::string file;  // as DWARF names it (absolute when the CU said so)
  int line = 0;      // 0: no line information
};

struct Symbol {
  std::string object;             // the mapping's path ("[unknown]" without a mapping)
  std::string function;           // demangled; kUnknownFunction when not found
  uint64_t file_address = 0;      // link-time address in the object (0 when unknown)
  uint64_t function_address = 0;  // link-time start of the function
  uint64_t function_size = 0;     // bytes (to the next symbol for zero-size ones)
  bool known = false;             // function was found in a symbol table
  // Named by the profile file's own frames because no symbol table could
  // name it (object gone, rebuilt, stripped); there is then no function
  // address or size, and profile_line is the file's source line.
  bool from_profile = false;
  SourceLine profile_line;
};

// One loaded ELF object (and its separate debug file, if any).
class ElfObject;

// A load segment of an object (elf(5) PT_LOAD).
struct LoadSegment {
  uint64_t file_offset, file_size, vaddr, mem_size;
  bool executable;
};

class Symbolizer {
 public:
  // debug_root: where distribution debug files live (/usr/lib/debug).
  explicit Symbolizer(std::string debug_root = "/usr/lib/debug");
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // mapping may be nullptr (address outside every mapping). carried: the
  // frames the profile file named the address with (format::Profile::frames),
  // used only when the object's symbol table cannot name it.
  Symbol symbolize(const format::Mapping* mapping, uint64_t address,
                   const std::vector<format::Frame>* carried = nullptr);
  // The source line of a symbolized address (DWARF .debug_line via libdw, or
  // the profile's own line for a symbol named from the profile).
  SourceLine source_line(const format::Mapping* mapping, const Symbol& symbol);
  // The source-level frames of a symbolized address, innermost first: the
  // functions inlined there (DWARF inlined-subroutine scopes) before the
  // function the symbol table names, each with its source line (the
  // innermost one's from the line table, each other's the site it inlined
  // the next one at). One frame without inlining or DWARF; none for an
  // address no symbol table names. with_lines false: names only (no line
  // table lookup; files and lines left empty).
  std::vector<format::Frame> frames(const format::Mapping* mapping, const Symbol& symbol, bool with_lines = true);
  // Runtime address -> link-time address of mapping's object; false when the
  // object cannot be read or the address is in none of its PT_LOAD segments.
  bool file_address(const format::Mapping& mapping, uint64_t address, uint64_t* out);
  // The PT_LOAD segments of the object behind mapping (empty when unreadable).
  std::vector<LoadSegment> segments(const format::Mapping& mapping);
  // Path of the file that holds the object's symbols/DWARF (the object or its
  // debug file); empty when unreadable.
  std::string symbol_file(const format::Mapping& mapping);
  // The uncompressed copy of that debug file read in its place
  // (debug_file_cache.h); empty when none is.
  std::string debug_copy(const format::Mapping& mapping);

  // Whether source_line() and frames() read the DWARF of distribution
  // debug files, those found by build id under the debug root (libc6-dbg,
  // -dbgsym packages): compressed, their inflate costs more than all the
  // rest of symbolizing, and anyone with the build id can read them again.
  // Without, their functions are named (their symbol tables are read) with
  // no line and no inline frames, and no uncompressed copy of a debug file
  // is made (one made before is read).
  void read_distribution_dwarf(bool read) { distribution_dwarf_ = read; }

  // Whether frames() reads the DWARF of mapping's object (it can be read,
  // and read_distribution_dwarf allows it): a writer's frames for the
  // mapping are then all there is to know (format::Mapping::symbolized).
  bool inline_frames_read(const format::Mapping& mapping);

  // Whether a mapping the profile file says it symbolized completely
  // (format::Mapping::symbolized) takes its names, lines and inline frames
  // from the file instead of from its objects, as pprof does (its
  // symbolizer skips mappings with has_functions unless -symbolize=force):
  // what `profil run` wrote is not computed twice. Such a symbol has no
  // function address or size (address view, gmon arcs): off by default.
  void file_names_first(bool first) { file_names_first_ = first; }

  // Problems met so far (missing file, build id mismatch), each said once,
  // with what became of the object's samples.
  std::vector<std::string> take_warnings();
  size_t objects_loaded() const { return objects_.size(); }

 private:
  // An object that cannot be used; whether the profile named its samples
  // instead is known only once they are symbolized, so the warning's words
  // are chosen when it is taken.
  struct ObjectProblem {
    std::string key;  // as objects_ is keyed
    std::string text;
    bool named_from_profile = false;
  };

  ElfObject* object_for(const format::Mapping& mapping);
  // The warning about mapping's object says its samples took the file's names.
  void note_named_from_profile(const format::Mapping& mapping);
  // object_for, when its DWARF may be read (read_distribution_dwarf).
  ElfObject* dwarf_object(const format::Mapping* mapping);

  std::string debug_root_;
  bool distribution_dwarf_ = true;
  bool file_names_first_ = false;
  std::map<std::string, std::unique_ptr<ElfObject>> objects_;  // key: path + '\0' + build id
  std::vector<ObjectProblem> problems_;  // not yet taken
  UnnamedCode unnamed_;  // names for what a readable object's symbol table does not name
};

// The last path component ("/usr/lib/libc.so.6" -> "libc.so.6").
std::string object_basename(const std::string& path);
// Lowercase hex GNU build id of an ELF file, "" when it has none or cannot be read.
std::string read_build_id(const std::string& path);

}  // namespace profiling::report

#endif  // PROFIL_REPORT_SYMBOLIZER_H
