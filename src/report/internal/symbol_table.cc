#include "report/internal/symbol_table.h"

#include <gelf.h>

#include <algorithm>
#include <cstring>
#include <unordered_map>

namespace profiling::report::internal {

namespace {

// Per section index, the end address of the section (0 for none).
std::vector<uint64_t> section_end_addresses(Elf* elf) {
  std::vector<uint64_t> ends(1, 0);
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr header;
    if (!gelf_getshdr(scn, &header)) continue;
    size_t index = elf_ndxscn(scn);
    if (ends.size() <= index) ends.resize(index + 1, 0);
    ends[index] = header.sh_addr + header.sh_size;
  }
  return ends;
}

}  // namespace

void SymbolTable::read(Dwfl_Module* module) {
  const int count = dwfl_module_getsymtab(module);
  std::vector<FunctionSymbol> found;
  std::vector<uint64_t> section_end;
  std::unordered_map<Elf*, std::vector<uint64_t>> section_ends;  // per file: section index -> end address
  for (int i = 0; i < count; ++i) {
    GElf_Sym sym;
    GElf_Addr address = 0;
    GElf_Word section = 0;
    Elf* elf = nullptr;
    Dwarf_Addr bias = 0;
    const char* name = dwfl_module_getsym_info(module, i, &sym, &address, &section, &elf, &bias);
    if (!name || !*name) continue;
    int symbol_type = GELF_ST_TYPE(sym.st_info);
    if (symbol_type != STT_FUNC && symbol_type != STT_GNU_IFUNC) continue;
    if (section == SHN_UNDEF || section >= SHN_LORESERVE || sym.st_value == 0) continue;
    if (elf_ == nullptr) elf_ = elf;
    int binding = GELF_ST_BIND(sym.st_info);
    uint8_t rank = binding == STB_GLOBAL ? 0 : binding == STB_WEAK ? 1 : 2;
    uint64_t end = sym.st_size ? address + sym.st_size : 0;
    found.push_back({address, end, name, rank});
    auto [ends, inserted] = section_ends.try_emplace(elf);
    if (inserted) ends->second = section_end_addresses(elf);
    const uint64_t limit = section < ends->second.size() && ends->second[section] ? ends->second[section] + bias : 0;
    section_end.push_back(limit);
  }
  // Zero-size symbols (assembly without .size) extend to the next symbol
  // or the end of their section, as perf's symbols__fixup_end does.
  std::vector<size_t> order(found.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const FunctionSymbol &x = found[a], &y = found[b];
    if (x.address != y.address) return x.address < y.address;
    if (x.rank != y.rank) return x.rank < y.rank;
    if ((x.end != 0) != (y.end != 0)) return x.end != 0;
    return std::strlen(x.raw_name) < std::strlen(y.raw_name);
  });
  symbols_.clear();
  symbols_.reserve(order.size());
  std::vector<uint64_t> limits;
  for (size_t i : order) {
    if (!symbols_.empty() && symbols_.back().address == found[i].address) continue;  // an alias
    symbols_.push_back(found[i]);
    limits.push_back(section_end[i]);
  }
  for (size_t i = 0; i < symbols_.size(); ++i) {
    if (symbols_[i].end != 0) continue;
    uint64_t next = i + 1 < symbols_.size() ? symbols_[i + 1].address : UINT64_MAX;
    uint64_t limit = limits[i] > symbols_[i].address ? limits[i] : UINT64_MAX;
    symbols_[i].end = std::min(next, limit);
    if (symbols_[i].end == UINT64_MAX) symbols_[i].end = symbols_[i].address + 1;
  }
}

const SymbolTable::FunctionSymbol* SymbolTable::lookup(uint64_t file_address) const {
  auto it = std::upper_bound(symbols_.begin(), symbols_.end(), file_address,
                             [](uint64_t a, const FunctionSymbol& s) { return a < s.address; });
  // A small function nested in a larger one (rare: hand-written assembly)
  // may end before the address; the enclosing one is then a step back.
  for (int step = 0; step < 2 && it != symbols_.begin(); ++step) {
    --it;
    if (file_address < it->end) return &*it;
  }
  return nullptr;
}

}  // namespace profiling::report::internal
