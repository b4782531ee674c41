#include "report/internal/scope_tree.h"

#include <dwarf.h>

#include <algorithm>

namespace profiling::report::internal {

// The code scopes directly under parent (through lexical blocks and
// namespaces), each a new node, their ranges into *found. With
// namespaces, parent's own namespaces are put there instead of looked into.
void ScopeTree::collect_children(Dwarf_Die* parent, UnitScopes* out, std::vector<ChildRange>* found,
                                 std::vector<Dwarf_Die>* namespaces) {
  Dwarf_Die child;
  if (dwarf_child(parent, &child) != 0) return;
  do {
    const int tag = dwarf_tag(&child);
    if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) {
      // Declarations and abstract instances (most of a C++ unit's
      // subprograms: 94 % in profil's own) have no address attribute. Their
      // abbreviation says so without decoding the DIE, where dwarf_ranges
      // looks for each of DW_AT_low_pc, DW_AT_high_pc and DW_AT_ranges.
      if (!dwarf_hasattr(&child, DW_AT_low_pc) && !dwarf_hasattr(&child, DW_AT_ranges)) continue;
      const auto node = static_cast<uint32_t>(out->nodes.size());
      Dwarf_Addr base, start, end;
      ptrdiff_t offset = 0;
      bool code = false;
      while ((offset = dwarf_ranges(&child, offset, &base, &start, &end)) > 0) {
        if (end <= start) continue;
        found->push_back({start, end, 0, node});
        code = true;
      }
      // Without code (a declaration, an abstract instance): nothing in it
      // has an address.
      if (code) out->nodes.push_back({child});
    } else if (namespaces && (tag == DW_TAG_namespace || tag == DW_TAG_module)) {
      namespaces->push_back(child);
    } else if (tag == DW_TAG_lexical_block || tag == DW_TAG_namespace || tag == DW_TAG_try_block ||
               tag == DW_TAG_catch_block || tag == DW_TAG_module) {
      collect_children(&child, out, found);
    }
    // Types, variables, parameters: no code scopes inside.
  } while (dwarf_siblingof(&child, &child) == 0);
}

void ScopeTree::expand(Dwarf_Die* die, UnitScopes* scopes, uint32_t* first, uint32_t* count,
                       std::vector<Dwarf_Die>* namespaces) {
  std::vector<ChildRange> found;
  collect_children(die, scopes, &found, namespaces);
  store_run(std::move(found), scopes, first, count);
}

// The unit's top level again, with what its namespaces hold.
void ScopeTree::look_into_namespaces(UnitScopes* scopes) {
  std::vector<ChildRange> found(scopes->ranges.begin() + scopes->first,
                                scopes->ranges.begin() + scopes->first + scopes->count);
  std::vector<Dwarf_Die> namespaces = std::move(scopes->namespaces);
  scopes->namespaces.clear();
  for (Dwarf_Die& die : namespaces) collect_children(&die, scopes, &found);
  store_run(std::move(found), scopes, &scopes->first, &scopes->count);
}

// Sorts found, a node's children's ranges, into a run of scopes->ranges.
void ScopeTree::store_run(std::vector<ChildRange> found, UnitScopes* scopes, uint32_t* first, uint32_t* count) {
  std::sort(found.begin(), found.end(), [](const ChildRange& a, const ChildRange& b) {
    return a.start != b.start ? a.start < b.start : a.node < b.node;
  });
  uint64_t reach = 0;
  for (ChildRange& range : found) range.reach = reach = std::max(reach, range.end);
  *first = static_cast<uint32_t>(scopes->ranges.size());
  *count = static_cast<uint32_t>(found.size());
  scopes->ranges.insert(scopes->ranges.end(), found.begin(), found.end());
}

// The child whose range holds address, the first in DIE order when
// several do (as a walk of the DIEs finds it); -1 when none.
int64_t ScopeTree::child_at(const UnitScopes& scopes, uint32_t first, uint32_t count, uint64_t address) {
  const ChildRange* begin = scopes.ranges.data() + first;
  const ChildRange* it = std::upper_bound(begin, begin + count, address,
                                          [](uint64_t a, const ChildRange& r) { return a < r.start; });
  int64_t best = -1;
  while (it != begin && (it - 1)->reach > address) {
    --it;
    if (address < it->end && (best < 0 || it->node < best)) best = it->node;
  }
  return best;
}

std::vector<Dwarf_Die> ScopeTree::scopes_at(Dwarf_Die* unit, uint64_t address) {
  auto [it, inserted] = units_.try_emplace(dwarf_dieoffset(unit));
  UnitScopes& scopes = it->second;
  if (inserted) expand(unit, &scopes, &scopes.first, &scopes.count, &scopes.namespaces);
  if (!scopes.namespaces.empty() && child_at(scopes, scopes.first, scopes.count, address) < 0)
    look_into_namespaces(&scopes);
  std::vector<Dwarf_Die> path;
  uint32_t first = scopes.first, count = scopes.count;
  for (int64_t node; (node = child_at(scopes, first, count, address)) >= 0;) {
    const auto index = static_cast<size_t>(node);
    if (!scopes.nodes[index].expanded) {
      // expand appends to nodes: the node is looked up again after.
      Dwarf_Die die = scopes.nodes[index].die;
      uint32_t child_first = 0, child_count = 0;
      expand(&die, &scopes, &child_first, &child_count);
      scopes.nodes[index].expanded = true;
      scopes.nodes[index].first = child_first;
      scopes.nodes[index].count = child_count;
    }
    path.push_back(scopes.nodes[index].die);
    first = scopes.nodes[index].first;
    count = scopes.nodes[index].count;
  }
  return path;
}

}  // namespace profiling::report::internal
