#include "report/vdso_names.h"

#include <elf.h>
#include <sys/auxv.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

namespace profiling::report {
namespace {

constexpr uint64_t kPage = 4096;

uint64_t round_up(uint64_t n) { return (n + kPage - 1) / kPage * kPage; }

// The bytes [offset, offset + length) of the image, nullptr when outside.
const uint8_t* at(const uint8_t* image, size_t size, uint64_t offset, uint64_t length) {
  return offset <= size && length <= size - offset ? image + offset : nullptr;
}

}  // namespace

const VdsoSymbols& VdsoSymbols::own() {
  static const VdsoSymbols symbols = [] {
    const unsigned long base = getauxval(AT_SYSINFO_EHDR);
    if (base == 0) return VdsoSymbols(nullptr, 0);
    // Its size is in its own program headers: read them first.
    const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(base);
    uint64_t end = sizeof(Elf64_Ehdr);
    const auto* ph = reinterpret_cast<const Elf64_Phdr*>(base + eh->e_phoff);
    for (unsigned i = 0; i < eh->e_phnum; ++i)
      if (ph[i].p_type == PT_LOAD) end = std::max(end, ph[i].p_offset + ph[i].p_filesz);
    // The section headers (and .dynsym's) lie past the segment's bytes
    // but in its last page, which is mapped (0x15e0 past 0x1522 on 6.18).
    return VdsoSymbols(reinterpret_cast<const void*>(base), round_up(end));
  }();
  return symbols;
}

VdsoSymbols::VdsoSymbols(const void* image_start, size_t size) {
  const auto* image = static_cast<const uint8_t*>(image_start);
  if (image == nullptr) return;
  const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(at(image, size, 0, sizeof(Elf64_Ehdr)));
  if (eh == nullptr || std::memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
      eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_shentsize != sizeof(Elf64_Shdr))
    return;
  const auto* ph = reinterpret_cast<const Elf64_Phdr*>(at(image, size, eh->e_phoff, eh->e_phnum * sizeof(Elf64_Phdr)));
  const auto* sh = reinterpret_cast<const Elf64_Shdr*>(at(image, size, eh->e_shoff, eh->e_shnum * sizeof(Elf64_Shdr)));
  if (ph == nullptr || sh == nullptr) return;
  // Link-time addresses from the first segment's: the mapping's start is
  // its page.
  uint64_t base = UINT64_MAX;
  for (unsigned i = 0; i < eh->e_phnum; ++i)
    if (ph[i].p_type == PT_LOAD) {
      base = std::min(base, ph[i].p_vaddr & ~(kPage - 1));
      size_ = std::max(size_, ph[i].p_offset + ph[i].p_filesz);
    }
  if (base == UINT64_MAX) return;
  // Of aliases, the global name wins (clock_gettime is a weak alias of
  // __vdso_clock_gettime).
  std::vector<std::pair<Function, bool>> found;  // function, weak
  for (unsigned i = 0; i < eh->e_shnum; ++i) {
    if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= eh->e_shnum || sh[i].sh_entsize != sizeof(Elf64_Sym)) continue;
    const Elf64_Shdr& strings = sh[sh[i].sh_link];
    const auto* names = reinterpret_cast<const char*>(at(image, size, strings.sh_offset, strings.sh_size));
    const auto* syms = reinterpret_cast<const Elf64_Sym*>(at(image, size, sh[i].sh_offset, sh[i].sh_size));
    if (names == nullptr || syms == nullptr || strings.sh_size == 0 || names[strings.sh_size - 1] != '\0') continue;
    for (size_t k = 0; k < sh[i].sh_size / sizeof(Elf64_Sym); ++k) {
      const Elf64_Sym& s = syms[k];
      if (ELF64_ST_TYPE(s.st_info) != STT_FUNC || s.st_shndx == SHN_UNDEF || s.st_size == 0 ||
          s.st_name >= strings.sh_size || s.st_value < base)
        continue;
      found.push_back({{s.st_value - base, s.st_value - base + s.st_size, names + s.st_name},
                       ELF64_ST_BIND(s.st_info) == STB_WEAK});
    }
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first.start, a.second, a.first.name) < std::tie(b.first.start, b.second, b.first.name);
  });
  for (auto& [function, weak] : found)
    if (functions_.empty() || functions_.back().start != function.start) functions_.push_back(std::move(function));
}

const std::string* VdsoSymbols::lookup(uint64_t address) const {
  auto it = std::upper_bound(functions_.begin(), functions_.end(), address,
                             [](uint64_t a, const Function& f) { return a < f.start; });
  if (it == functions_.begin()) return nullptr;
  --it;
  return address < it->end ? &it->name : nullptr;
}

size_t name_vdso_code(format::Profile* profile, const VdsoSymbols& symbols) {
  std::vector<const format::Mapping*> vdso;
  for (const format::Mapping& m : profile->mappings)
    if (m.path == "[vdso]" && symbols.functions() > 0 && m.limit - m.start >= symbols.size() &&
        m.limit - m.start <= round_up(symbols.size()) + kPage)
      vdso.push_back(&m);
  if (vdso.empty()) return 0;
  size_t named = 0;
  auto name = [&](uint64_t address) {
    for (const format::Mapping* m : vdso) {
      if (!m->contains(address) || profile->frames.count(address)) continue;
      if (const std::string* found = symbols.lookup(address - m->start)) {
        profile->frames[address] = {format::Frame{*found, *found, "", 0}};
        ++named;
      }
    }
  };
  // Each chain once: samples share their callers' chains.
  std::set<uint32_t> chains;
  for (const format::Sample& sample : profile->samples) {
    name(sample.address);
    if (sample.stack != format::StackTable::kNoCallers && chains.insert(sample.stack).second)
      for (const uint64_t caller : profile->stacks.callers(sample.stack)) name(caller);
  }
  return named;
}

}  // namespace profiling::report
