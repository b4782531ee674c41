// The function symbols of one libdwfl module, sorted once so that each
// address is one binary search. libdwfl chooses the table: the object's
// .symtab, else its debug file's, else .dynsym together with the
// MiniDebugInfo symbols of .gnu_debugdata (gdb manual, "MiniDebugInfo").
// dwfl_module_addrinfo would scan the whole table for every address
// (libdwfl's dwfl_module_addrsym.c).
//
// Not thread-safe; one table per ElfObject (elf_object.h), which reads it
// on its first lookup. The names are libdwfl's strings: valid while the
// module's Dwfl lives. Host side only: allocates.
#ifndef PROFIL_REPORT_INTERNAL_SYMBOL_TABLE_H
#define PROFIL_REPORT_INTERNAL_SYMBOL_TABLE_H

#include <elfutils/libdwfl.h>

#include <cstdint>
#include <vector>

namespace profiling::report::internal {

class SymbolTable {
 public:
  struct FunctionSymbol {
    uint64_t address;
    uint64_t end;  // one past the last byte
    const char* raw_name;
    uint8_t rank;  // lower wins among aliases at one address
  };

  // Reads module's table (its STT_FUNC and STT_GNU_IFUNC symbols with an
  // address); once.
  void read(Dwfl_Module* module);
  // The function holding file_address (a link-time address), or nullptr.
  const FunctionSymbol* lookup(uint64_t file_address) const;
  // The ELF file the functions came from (the object, its debug file or
  // its MiniDebugInfo); nullptr when there were none.
  Elf* file() const { return elf_; }

 private:
  std::vector<FunctionSymbol> symbols_;  // by address, one per address
  Elf* elf_ = nullptr;
};

}  // namespace profiling::report::internal

#endif  // PROFIL_REPORT_INTERNAL_SYMBOL_TABLE_H
