#include "report/own_samples.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <iterator>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

namespace profiling::report {
namespace {

std::string_view file_name(const std::string& path) {
  const size_t slash = path.rfind('/');
  return std::string_view(path).substr(slash == std::string::npos ? 0 : slash + 1);
}

// What libprofil's own code calls into: a frame there says nothing of whose
// work it is, the caller does.
bool passes_through(const format::Mapping* m) {
  if (m == nullptr) return false;
  const std::string_view name = file_name(m->path);
  return name.starts_with("libc.so") || name.starts_with("ld-linux") || name.starts_with("libpthread.so") ||
         name.starts_with("libdl.so") || name.starts_with("librt.so") || name == "[vdso]";
}

using Range = std::pair<uint64_t, uint64_t>;  // [first, limit), runtime addresses

// The runtime ranges of the functions mapping's object exports (defined
// STT_FUNC / STT_GNU_IFUNC symbols of .dynsym), inside the mapping.
// Empty when the object cannot be read.
std::vector<Range> exported_functions(const format::Mapping& mapping) {
  std::vector<Range> out;
  if (elf_version(EV_CURRENT) == EV_NONE) return out;
  // O_NONBLOCK and the regular-file check: a profile names any path it
  // likes (as the symbolizer opens it).
  const int fd = ::open(mapping.path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return out;
  struct stat st;
  Elf* elf = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? elf_begin(fd, ELF_C_READ_MMAP, nullptr) : nullptr;
  // The load segments: a symbol's file offset is st_value - p_vaddr +
  // p_offset of the one holding it, and the mapping puts file offset o at
  // start + o - file_offset.
  std::vector<GElf_Phdr> segments;
  size_t headers = 0;
  if (elf != nullptr && elf_kind(elf) == ELF_K_ELF && elf_getphdrnum(elf, &headers) == 0) {
    for (size_t i = 0; i < headers; ++i) {
      GElf_Phdr h;
      if (gelf_getphdr(elf, static_cast<int>(i), &h) && h.p_type == PT_LOAD) segments.push_back(h);
    }
  }
  for (Elf_Scn* scn = segments.empty() ? nullptr : elf_nextscn(elf, nullptr); scn != nullptr;
       scn = elf_nextscn(elf, scn)) {
    GElf_Shdr header;
    if (!gelf_getshdr(scn, &header) || header.sh_type != SHT_DYNSYM || header.sh_entsize == 0) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    for (size_t i = 0; data != nullptr && i < header.sh_size / header.sh_entsize; ++i) {
      GElf_Sym sym;
      if (!gelf_getsym(data, static_cast<int>(i), &sym) || sym.st_shndx == SHN_UNDEF || sym.st_size == 0) continue;
      const int type = GELF_ST_TYPE(sym.st_info);
      if (type != STT_FUNC && type != STT_GNU_IFUNC) continue;
      for (const GElf_Phdr& h : segments) {
        if (sym.st_value < h.p_vaddr || sym.st_value - h.p_vaddr >= h.p_filesz) continue;
        const uint64_t offset = sym.st_value - h.p_vaddr + h.p_offset;
        if (offset < mapping.file_offset || offset - mapping.file_offset >= mapping.limit - mapping.start) break;
        const uint64_t first = mapping.start + (offset - mapping.file_offset);
        out.emplace_back(first, first + sym.st_size);
        break;
      }
    }
  }
  if (elf != nullptr) elf_end(elf);
  ::close(fd);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

uint64_t set_apart_own_samples(format::Profile* profile) {
  struct Ours {
    const format::Mapping* mapping;
    std::vector<Range> exported;
  };
  std::vector<Ours> ours;
  for (const format::Mapping& m : profile->mappings)
    if (file_name(m.path).starts_with("libprofil.so")) ours.push_back({&m, exported_functions(m)});
  if (ours.empty()) return 0;

  // 1: profil's work, 0: the program's, -1: look further out.
  auto verdict = [&](uint64_t address) -> int {
    const format::Mapping* m = profile->mapping_for(address);
    if (address == format::kKernelAddress || passes_through(m)) return -1;
    for (const Ours& o : ours) {
      if (o.mapping != m) continue;
      auto after = std::upper_bound(o.exported.begin(), o.exported.end(), Range{address, UINT64_MAX});
      const bool exported = after != o.exported.begin() && address < std::prev(after)->second;
      return exported ? 0 : 1;
    }
    return 0;
  };
  // Per chain, the verdict its callers give (2: not yet known).
  std::vector<int8_t> chains(profile->stacks.size() + 1, 2);
  auto chain_verdict = [&](uint32_t id) -> int {
    int8_t& known = chains[id];
    if (known == 2) {
      known = -1;
      for (const uint64_t frame : profile->stacks.callers(id)) {
        known = static_cast<int8_t>(verdict(frame));
        if (known != -1) break;
      }
    }
    return known;
  };
  uint64_t moved = 0;
  std::erase_if(profile->samples, [&](const format::Sample& s) {
    // The leaf in libprofil is profil's code running, exported or not.
    const format::Mapping* m = profile->mapping_for(s.address);
    bool own = std::any_of(ours.begin(), ours.end(), [m](const Ours& o) { return o.mapping == m; });
    if (!own && (s.address == format::kKernelAddress || passes_through(m))) own = chain_verdict(s.stack) == 1;
    if (own) format::saturating_add(moved, s.count);
    return own;
  });
  // The program's samples keep their stacks without libprofil's frames:
  // its thread trampoline, the interposers the program called through,
  // its front for the program's signal handlers are plumbing, so a stack
  // reads as it would without profil (main -> allocate_stack, not main ->
  // libprofil's pthread_create -> allocate_stack).
  const size_t chains_before = profile->stacks.size();
  std::vector<uint32_t> without_ours(chains_before + 1, UINT32_MAX);
  std::vector<uint64_t> kept;
  bool rechained = false;
  for (format::Sample& s : profile->samples) {
    if (s.stack == format::StackTable::kNoCallers || s.stack > chains_before) continue;
    uint32_t& id = without_ours[s.stack];
    if (id == UINT32_MAX) {
      id = s.stack;
      const std::span<const uint64_t> callers = profile->stacks.callers(s.stack);
      auto is_ours = [&](uint64_t frame) {
        const format::Mapping* m = profile->mapping_for(frame);
        return std::any_of(ours.begin(), ours.end(), [m](const Ours& o) { return o.mapping == m; });
      };
      if (std::any_of(callers.begin(), callers.end(), is_ours)) {
        kept.clear();
        for (const uint64_t frame : callers)
          if (!is_ours(frame)) kept.push_back(frame);
        id = profile->stacks.intern(kept, profile->stacks.truncated(s.stack));
      }
    }
    rechained |= id != s.stack;
    s.stack = id;
  }
  if (moved == 0 && !rechained) return 0;
  format::saturating_add(profile->own_samples, moved);
  format::canonicalize_stacks(profile);
  return moved;
}

}  // namespace profiling::report
