#include "interp/process_symbols.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace profiling::interp {

std::map<std::string, MappedFile> mapped_files(pid_t pid) {
  std::map<std::string, MappedFile> files;
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  std::string line;
  while (std::getline(maps, line)) {
    std::istringstream in(line);
    std::string range, perms, offset, dev, inode, path;
    in >> range >> perms >> offset >> dev >> inode;
    std::getline(in >> std::ws, path);
    if (path.empty() || path[0] != '/') continue;
    MappedFile m;
    m.start = std::stoull(range.substr(0, range.find('-')), nullptr, 16);
    m.offset = std::stoull(offset, nullptr, 16);
    MappedFile& kept = files[path];
    if (m.offset < kept.offset) kept = m;
  }
  return files;
}

ElfSymbols read_symbols(const std::string& file, const MappedFile& mapping,
                        std::initializer_list<const char*> wanted, std::string* why) {
  ElfSymbols out;
  elf_version(EV_CURRENT);
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *why = file + ": " + std::strerror(errno);
    return out;
  }
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  GElf_Ehdr ehdr;
  size_t phnum = 0;
  if (elf == nullptr || gelf_getehdr(elf, &ehdr) == nullptr || elf_getphdrnum(elf, &phnum) != 0) {
    *why = file + ": not an ELF file libelf reads (" + elf_errmsg(-1) + ")";
    if (elf != nullptr) elf_end(elf);
    ::close(fd);
    return out;
  }
  bool placed = ehdr.e_type == ET_EXEC;  // a fixed-address program: bias 0
  for (size_t i = 0; i < phnum && !placed; ++i) {
    GElf_Phdr ph;
    if (gelf_getphdr(elf, static_cast<int>(i), &ph) == nullptr || ph.p_type != PT_LOAD) continue;
    if ((ph.p_offset & ~uint64_t{0xfff}) == mapping.offset) {
      out.bias = mapping.start - (ph.p_vaddr & ~uint64_t{0xfff});
      placed = true;
    }
  }
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
        sh.sh_entsize == 0)
      continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    const size_t count = sh.sh_size / sh.sh_entsize;
    for (size_t i = 0; data != nullptr && i < count; ++i) {
      GElf_Sym sym;
      if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr || sym.st_value == 0) continue;
      const char* name = elf_strptr(elf, sh.sh_link, sym.st_name);
      if (name == nullptr || name[0] == '\0') continue;
      for (const char* w : wanted)
        if (std::strcmp(name, w) == 0) {
          out.values[w] = sym.st_value;
          out.sizes[w] = sym.st_size;
        }
    }
  }
  elf_end(elf);
  ::close(fd);
  if (!placed) {
    *why = file + ": no loadable segment at the mapped offset";
    return out;
  }
  out.ok = true;
  return out;
}

}  // namespace profiling::interp
