// One object a profile's mappings name, as a libdwfl module reported at its
// link-time addresses (base 0), with what the symbolizer asks of it: the
// runtime -> link-time address (its PT_LOAD program headers), the function
// at an address (symbol_table.h), its source line and inline frames
// (module_dwarf.h). Its debug file is found by debug_file_finder.h. A
// program that is gone is read from the debug file of the build id the
// profile recorded (objcopy(1) --only-keep-debug keeps the program headers
// and the symbols).
//
// Owned by the Symbolizer (symbolizer.h), one per path and build id; not
// thread-safe (one Dwfl each, which libdwfl does not lock). Reads only what
// is asked: the program headers when loaded, the symbol table on the first
// lookup, the DWARF on the first line or inline frame. Caches those and
// each name it demangled. In namespace report, as symbolizer.h declares it.
// Host side only: allocates.
#ifndef PROFIL_REPORT_INTERNAL_ELF_OBJECT_H
#define PROFIL_REPORT_INTERNAL_ELF_OBJECT_H

#include <elfutils/libdwfl.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "format/profile.h"
#include "report/internal/debug_file_finder.h"
#include "report/internal/module_dwarf.h"
#include "report/internal/symbol_table.h"
#include "report/symbolizer.h"

namespace profiling::report {

class ElfObject {
 public:
  using FunctionSymbol = internal::SymbolTable::FunctionSymbol;

  // debug_root and copy_debug_files: as DebugFileFinder takes them.
  ElfObject(const std::string& debug_root, bool copy_debug_files);
  ~ElfObject();
  ElfObject(const ElfObject&) = delete;
  ElfObject& operator=(const ElfObject&) = delete;

  // Empty string on success, the reason otherwise. profile_build_id: the
  // build id the profile recorded for the mapping, to find the debug file
  // of a program that is gone.
  std::string load(const std::string& path, const std::string& profile_build_id);

  std::string build_id;  // of the object read, "" when it has none
  std::vector<LoadSegment> segments;

  // Runtime address -> link-time address; false when it is in none of the
  // PT_LOAD segments mapping's pages hold.
  bool to_file_address(const format::Mapping& mapping, uint64_t address, uint64_t* out) const;
  // The function holding file_address, or nullptr.
  const FunctionSymbol* lookup(uint64_t file_address);
  // Demangled once per distinct name: a symbol's, or an inlined
  // function's (the chains of many addresses repeat the same ones).
  const std::string& demangled(const char* raw_name);
  internal::LineAt source_line(uint64_t file_address) { return dwarf_.source_line(file_address); }
  std::vector<internal::InlinedCall> inlined_at(uint64_t file_address, bool call_files) {
    return dwarf_.inlined_at(file_address, call_files);
  }
  // The file the symbol table was read from: the object, or its separate
  // debug file (MiniDebugInfo is inside the object).
  std::string symbol_file();
  // The uncompressed copy read in place of the debug file, or "".
  const std::string& debug_copy() const { return finder_.debug_copy(); }

 private:
  bool to_file_address_by_size(const format::Mapping& mapping, uint64_t address, uint64_t* out) const;
  void ensure_symbols();

  internal::DebugFileFinder finder_;
  Dwfl* dwfl_ = nullptr;
  Dwfl_Module* module_ = nullptr;
  Elf* main_elf_ = nullptr;
  bool debug_file_only_ = false;  // the program is gone: main_elf_ is its debug file
  std::string main_path_;
  bool symbols_read_ = false;
  internal::SymbolTable symbols_;
  std::unordered_map<const char*, std::string> names_;
  internal::ModuleDwarf dwarf_;
};

}  // namespace profiling::report

#endif  // PROFIL_REPORT_INTERNAL_ELF_OBJECT_H
