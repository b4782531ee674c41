// The DWARF of one libdwfl module, for source lines and inline frames: the
// compile unit of an address (through .debug_aranges, else the units' own
// ranges), its line table, and the inlined calls there (scope_tree.h).
// libdwfl reads the DWARF, and finds the debug file that holds it
// (debug_file_finder.h), on the first question: names need only the symbol
// table.
//
// One per ElfObject (elf_object.h). Not thread-safe. Caches, for the life of
// the module's Dwfl: the units' ranges (once .debug_aranges misses) and the
// scope trees of the units asked for. The strings it returns are libdw's,
// valid as long. Host side only: allocates.
#ifndef PROFIL_REPORT_INTERNAL_MODULE_DWARF_H
#define PROFIL_REPORT_INTERNAL_MODULE_DWARF_H

#include <elfutils/libdwfl.h>

#include <cstdint>
#include <vector>

#include "report/internal/scope_tree.h"

namespace profiling::report::internal {

// A source line of the line table.
struct LineAt {
  const char* file = nullptr;  // as DWARF names it; nullptr: no line information
  int line = 0;
};

// A function inlined at an address, with the site it was inlined at
// (DW_AT_call_file, DW_AT_call_line).
struct InlinedCall {
  // The linkage name when there is one (to demangle), else DW_AT_name;
  // nullptr when the DIE names none.
  const char* name = nullptr;
  const char* call_file = nullptr;
  int call_line = 0;
};

class ModuleDwarf {
 public:
  // module: the module to read (set before any question; nullptr answers
  // nothing).
  void set_module(Dwfl_Module* module) { module_ = module; }

  // The line table's line at file_address (a link-time address).
  LineAt source_line(uint64_t file_address);

  // The functions inlined at file_address (DWARF DW_TAG_inlined_subroutine
  // scopes, from the unit's scope tree), innermost first, each with the site
  // it was inlined at (the file only with call_files: the unit's file table
  // is its line program's header, which libdw 0.188's dwarf_getsrcfiles
  // reads by decoding the whole line program). Empty without DWARF or
  // inlining.
  std::vector<InlinedCall> inlined_at(uint64_t file_address, bool call_files);

 private:
  struct UnitRange {
    uint64_t start, end;
    Dwarf_Die unit;
  };

  template <typename Use>
  bool with_unit_at(uint64_t file_address, Use&& use);
  void load_unit_ranges();

  Dwfl_Module* module_ = nullptr;
  bool units_loaded_ = false;
  Dwarf_Addr dwarf_bias_ = 0;
  std::vector<UnitRange> units_;  // by start
  ScopeTree scopes_;
};

}  // namespace profiling::report::internal

#endif  // PROFIL_REPORT_INTERNAL_MODULE_DWARF_H
