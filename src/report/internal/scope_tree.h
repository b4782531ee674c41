// The code scopes of DWARF compile units as trees, for the inline frames of
// an address: a unit's functions and inlined calls with code
// (DW_TAG_subprogram and DW_TAG_inlined_subroutine, nested as their DIEs
// are; lexical blocks and namespaces are looked through). A node's children
// are read from its DIE when an address first falls inside it, and the
// unit's top level when the unit is first asked for: the other functions'
// subtrees are skipped (DW_AT_sibling), which on profil's own 55 MB of
// DWARF was most of the report's CPU and of its memory (the whole tree,
// 158 MB peak RSS against 34 MB without inline frames).
//
// The namespaces at a unit's top level are looked into only when no
// function there holds the address. GCC puts every function with code at
// the top level (a definition refers to its declaration in the namespace
// by DW_AT_specification), and the namespaces hold only declarations: in
// profil's own DWARF, 74,000 of the 251,000 DIEs of the units' top levels,
// none with code. clang and rustc put functions inside their namespaces:
// those are found on the second look.
//
// One tree per module (module_dwarf.h), caching every unit asked for and
// every node expanded, for the life of the module's Dwfl (the DIEs point
// into its DWARF). Not thread-safe. Host side only: allocates.
#ifndef PROFIL_REPORT_INTERNAL_SCOPE_TREE_H
#define PROFIL_REPORT_INTERNAL_SCOPE_TREE_H

#include <elfutils/libdw.h>

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace profiling::report::internal {

class ScopeTree {
 public:
  // unit's scopes containing address (a DWARF address), outermost first:
  // each inlined call in the one it was inlined into, as elfutils' addr2line
  // -i walks them (dwarf_getscopes would walk the whole unit for every
  // address: 2.9 times the report's CPU on profil's own C++).
  std::vector<Dwarf_Die> scopes_at(Dwarf_Die* unit, uint64_t address);

 private:
  struct ScopeNode {
    Dwarf_Die die;
    bool expanded = false;
    uint32_t first = 0, count = 0;  // its children's ranges in UnitScopes::ranges, once expanded
  };
  // A child's address range, sorted by start in each node's run of them;
  // reach: the largest end up to this one in the run, so that the ranges
  // holding an address are found without looking at those before it.
  struct ChildRange {
    uint64_t start, end, reach;
    uint32_t node;
  };
  struct UnitScopes {
    std::vector<ScopeNode> nodes;
    std::vector<ChildRange> ranges;
    uint32_t first = 0, count = 0;  // the unit's top level
    std::vector<Dwarf_Die> namespaces;  // at the top level, not yet looked into
  };

  static void collect_children(Dwarf_Die* parent, UnitScopes* out, std::vector<ChildRange>* found,
                               std::vector<Dwarf_Die>* namespaces = nullptr);
  static void expand(Dwarf_Die* die, UnitScopes* scopes, uint32_t* first, uint32_t* count,
                     std::vector<Dwarf_Die>* namespaces = nullptr);
  static void look_into_namespaces(UnitScopes* scopes);
  static void store_run(std::vector<ChildRange> found, UnitScopes* scopes, uint32_t* first, uint32_t* count);
  static int64_t child_at(const UnitScopes& scopes, uint32_t first, uint32_t count, uint64_t address);

  std::unordered_map<Dwarf_Off, UnitScopes> units_;  // by the unit DIE's offset
};

}  // namespace profiling::report::internal

#endif  // PROFIL_REPORT_INTERNAL_SCOPE_TREE_H
