#include "report/internal/module_dwarf.h"

#include <dwarf.h>

#include <algorithm>

namespace profiling::report::internal {

// Calls use(unit, dwarf_address) for the compile units whose range holds
// file_address until it returns true; false when none did (or there is
// no DWARF). The DWARF (and the debug file that holds it) is read on the
// first call only.
template <typename Use>
bool ModuleDwarf::with_unit_at(uint64_t file_address, Use&& use) {
  if (module_ == nullptr) return false;
  // libdwfl finds the unit through .debug_aranges (dwfl_module_addrdie).
  // The unit it names is the answer even when use finds nothing there (an
  // assembler unit has lines but no functions: glibc's string functions):
  // asking every other unit would read all their ranges (896 units with
  // libc6-dbg, a fifth of an inline report's CPU) to find the same.
  Dwarf_Addr bias = 0;
  if (Dwarf_Die* unit = dwfl_module_addrdie(module_, file_address, &bias)) return use(unit, file_address - bias);
  // Units .debug_aranges does not cover (it is optional: clang and rustc
  // leave it out) are found by their own ranges, read once.
  if (!units_loaded_) load_unit_ranges();
  const uint64_t address = file_address - dwarf_bias_;
  auto it = std::upper_bound(units_.begin(), units_.end(), address,
                             [](uint64_t a, const UnitRange& u) { return a < u.start; });
  // Units' ranges rarely overlap; a few candidates back cover the case
  // of one unit's range enclosing another's.
  for (int step = 0; step < 8 && it != units_.begin(); ++step) {
    --it;
    if (address < it->end && use(&it->unit, address)) return true;
  }
  return false;
}

void ModuleDwarf::load_unit_ranges() {
  units_loaded_ = true;
  Dwarf_Addr bias = 0;
  Dwarf* dwarf = dwfl_module_getdwarf(module_, &bias);
  if (!dwarf) return;
  dwarf_bias_ = bias;
  Dwarf_CU* unit = nullptr;
  Dwarf_Die unit_die;
  Dwarf_Half version;
  uint8_t unit_type;
  while (dwarf_get_units(dwarf, unit, &unit, &version, &unit_type, &unit_die, nullptr) == 0) {
    if (unit_type != DW_UT_compile && unit_type != DW_UT_skeleton && unit_type != DW_UT_partial) continue;
    Dwarf_Addr base, start, end;
    ptrdiff_t offset = 0;
    while ((offset = dwarf_ranges(&unit_die, offset, &base, &start, &end)) > 0)
      if (end > start) units_.push_back({start, end, unit_die});
  }
  std::sort(units_.begin(), units_.end(), [](const UnitRange& a, const UnitRange& b) { return a.start < b.start; });
}

LineAt ModuleDwarf::source_line(uint64_t file_address) {
  LineAt result;
  with_unit_at(file_address, [&](Dwarf_Die* unit, uint64_t address) {
    Dwarf_Line* line = dwarf_getsrc_die(unit, address);
    if (!line) return false;
    int number = 0;
    const char* file = dwarf_linesrc(line, nullptr, nullptr);
    dwarf_lineno(line, &number);
    result.file = file ? file : "";
    result.line = number;
    return true;
  });
  return result;
}

std::vector<InlinedCall> ModuleDwarf::inlined_at(uint64_t file_address, bool call_files) {
  std::vector<InlinedCall> chain;
  with_unit_at(file_address, [&](Dwarf_Die* unit, uint64_t address) {
    const std::vector<Dwarf_Die> path = scopes_.scopes_at(unit, address);
    if (path.empty()) return false;
    Dwarf_Files* files = nullptr;
    size_t file_count = 0;
    if (!call_files || dwarf_getsrcfiles(unit, &files, &file_count) != 0) files = nullptr;
    for (auto scope = path.rbegin(); scope != path.rend(); ++scope) {
      Dwarf_Die die = *scope;
      if (dwarf_tag(&die) != DW_TAG_inlined_subroutine) continue;
      InlinedCall call;
      Dwarf_Attribute attribute;
      // _integrate follows DW_AT_abstract_origin to the inlined function.
      for (int at : {DW_AT_linkage_name, DW_AT_MIPS_linkage_name, DW_AT_name})
        if (!call.name && dwarf_attr_integrate(&die, at, &attribute)) call.name = dwarf_formstring(&attribute);
      Dwarf_Word value = 0;
      if (dwarf_attr(&die, DW_AT_call_line, &attribute) && dwarf_formudata(&attribute, &value) == 0)
        call.call_line = static_cast<int>(value);
      if (files && dwarf_attr(&die, DW_AT_call_file, &attribute) && dwarf_formudata(&attribute, &value) == 0 &&
          value < file_count)
        call.call_file = dwarf_filesrc(files, value, nullptr, nullptr);
      chain.push_back(call);
    }
    return true;
  });
  return chain;
}

}  // namespace profiling::report::internal
