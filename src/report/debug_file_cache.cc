#include "report/debug_file_cache.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "base/io.h"
#include "base/unique_fd.h"
#include "report/internal/elf_file.h"

namespace profiling::report {

namespace {

using ElfPointer = std::unique_ptr<Elf, decltype(&elf_end)>;

ElfPointer open_elf(int fd) {
  internal::init_libelf();
  ElfPointer elf(elf_begin(fd, ELF_C_READ_MMAP, nullptr), &elf_end);
  if (elf && elf_kind(elf.get()) != ELF_K_ELF) elf.reset();
  return elf;
}

// gABI compression (SHF_COMPRESSED) or the GNU one before it, a .zdebug_
// section holding "ZLIB", its size and the deflated data (binutils'
// --compress-debug-sections=zlib-gnu).
bool gnu_compressed(const char* name) { return name && std::strncmp(name, ".zdebug", 7) == 0; }

struct Scan {
  bool compressed = false;
  bool within = true;  // every section and the section header table inside the file's size
};

Scan scan(Elf* elf, uint64_t file_size) {
  Scan out;
  size_t names = 0, count = 0;
  GElf_Ehdr header;
  if (elf_getshdrstrndx(elf, &names) != 0 || elf_getshdrnum(elf, &count) != 0 || !gelf_getehdr(elf, &header) ||
      header.e_shoff + count * uint64_t{header.e_shentsize} > file_size)
    return {false, false};
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr section;
    if (!gelf_getshdr(scn, &section)) return {false, false};
    if ((section.sh_flags & SHF_COMPRESSED) || gnu_compressed(elf_strptr(elf, names, section.sh_name)))
      out.compressed = true;
    if (section.sh_type != SHT_NOBITS && section.sh_offset + section.sh_size > file_size) out.within = false;
  }
  return out;
}

// A copy in the cache for build id id: an ELF file of that build id, with
// no compressed section and nothing past its end (a copy cut short by a
// crash or a full disk before its rename, or damaged since, is not used).
base::UniqueFd open_valid_copy(const std::string& path, const std::string& id) {
  base::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  struct stat st;
  if (!fd.valid() || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return {};
  ElfPointer elf = open_elf(fd.get());
  if (!elf || internal::elf_build_id(elf.get()) != id) return {};
  const Scan found = scan(elf.get(), static_cast<uint64_t>(st.st_size));
  if (found.compressed || !found.within) return {};
  return fd;
}

// mkdir -p, private to the user as the XDG cache directory is (0700).
std::string make_directories(const std::string& dir) {
  for (size_t slash = 1; slash != std::string::npos;) {
    slash = dir.find('/', slash + 1);
    const std::string prefix = dir.substr(0, slash);
    if (::mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) return prefix + ": " + std::strerror(errno);
  }
  return {};
}

uint64_t align_up(uint64_t value, uint64_t alignment) {
  return alignment > 1 ? (value + alignment - 1) / alignment * alignment : value;
}

// Writes source, its compressed sections inflated (elf_compress(3),
// elf_compress_gnu), as dir/name: under a temporary name, renamed when
// whole. As eu-elfcompress does, the allocated sections and the program
// headers stay where they were (ELF_F_LAYOUT) and the others are laid out
// after them, so every offset in the copy is right.
std::string write_copy(Elf* source, int dirfd, const std::string& name) {
  GElf_Ehdr header;
  size_t phnum = 0, names = 0;
  if (!gelf_getehdr(source, &header) || elf_getphdrnum(source, &phnum) != 0 ||
      elf_getshdrstrndx(source, &names) != 0 || names >= SHN_LORESERVE)
    return elf_errmsg(-1);
  Elf_Scn* names_section = elf_getscn(source, names);
  Elf_Data* names_data = names_section ? elf_getdata(names_section, nullptr) : nullptr;
  if (names_data == nullptr || names_data->d_buf == nullptr) return "no section names";
  // The legacy sections' names lose their 'z' (".zdebug_info" is read as
  // compressed whatever its flags): it becomes the name's first byte.
  std::string section_names(static_cast<const char*>(names_data->d_buf), names_data->d_size);

  base::AtomicFile file;
  if (!file.open(dirfd, name.c_str(), 0644)) return std::strerror(errno);
  ElfPointer copy(elf_begin(file.fd(), ELF_C_WRITE, nullptr), &elf_end);
  if (!copy || !gelf_newehdr(copy.get(), gelf_getclass(source)) || (phnum && !gelf_newphdr(copy.get(), phnum)))
    return elf_errmsg(-1);
  for (size_t i = 0; i < phnum; ++i) {
    GElf_Phdr segment;
    if (!gelf_getphdr(source, static_cast<int>(i), &segment) ||
        !gelf_update_phdr(copy.get(), static_cast<int>(i), &segment))
      return elf_errmsg(-1);
  }
  // A dwz file has no program headers (e_phoff 0): the ELF header's end.
  uint64_t end = std::max<uint64_t>(gelf_fsize(source, ELF_T_EHDR, 1, EV_CURRENT),
                                    header.e_phoff + phnum * uint64_t{header.e_phentsize});
  std::vector<std::pair<Elf_Scn*, GElf_Shdr>> unallocated;
  for (Elf_Scn* scn = elf_nextscn(source, nullptr); scn; scn = elf_nextscn(source, scn)) {
    GElf_Shdr section;
    if (!gelf_getshdr(scn, &section)) return elf_errmsg(-1);
    if (section.sh_flags & SHF_COMPRESSED) {
      if (elf_compress(scn, 0, 0) < 0) return elf_errmsg(-1);
    } else if (section.sh_name + 1 < section_names.size() && gnu_compressed(&section_names[section.sh_name])) {
      if (elf_compress_gnu(scn, 0, 0) < 0) return elf_errmsg(-1);
      section_names[++section.sh_name] = '.';
    }
    const GElf_Word name_offset = section.sh_name;
    if (!gelf_getshdr(scn, &section)) return elf_errmsg(-1);  // inflated: its new size and flags
    section.sh_name = name_offset;
    Elf_Scn* out = elf_newscn(copy.get());
    Elf_Data* data = elf_getdata(scn, nullptr);
    Elf_Data* out_data = out ? elf_newdata(out) : nullptr;
    if (out_data == nullptr || data == nullptr) return elf_errmsg(-1);
    *out_data = *data;
    if (elf_ndxscn(scn) == names) out_data->d_buf = section_names.data();
    if (section.sh_flags & SHF_ALLOC) {
      if (section.sh_type != SHT_NOBITS) end = std::max(end, section.sh_offset + section.sh_size);
      if (!gelf_update_shdr(out, &section)) return elf_errmsg(-1);
    } else {
      unallocated.emplace_back(out, section);
    }
  }
  for (auto& [out, section] : unallocated) {
    section.sh_offset = align_up(end, std::max<uint64_t>(section.sh_addralign, 1));
    if (section.sh_type != SHT_NOBITS) end = section.sh_offset + section.sh_size;
    if (!gelf_update_shdr(out, &section)) return elf_errmsg(-1);
  }
  header.e_shoff = align_up(end, 8);
  elf_flagelf(copy.get(), ELF_C_SET, ELF_F_LAYOUT);
  if (!gelf_update_ehdr(copy.get(), &header) || elf_update(copy.get(), ELF_C_WRITE) < 0) {
    // libelf's message names no errno: a full disk reads "cannot write data to file".
    return elf_errmsg(-1);
  }
  copy.reset();
  // No fsync: a copy cut short by a power failure is found invalid and made again.
  if (!file.commit(false)) return std::strerror(errno);
  return {};
}

void warn_once(const std::string& text) {
  static bool warned = false;
  if (warned) return;
  warned = true;
  std::fprintf(stderr, "profil: %s\n", text.c_str());
}

}  // namespace

std::string debug_file_cache_dir() {
  const char* cache = std::getenv("XDG_CACHE_HOME");
  if (cache && cache[0] == '/') return std::string(cache) + "/profil/debug";
  const char* home = std::getenv("HOME");
  if (home && home[0] == '/') return std::string(home) + "/.cache/profil/debug";
  return {};
}

int open_uncompressed_debug_file(int fd, const std::string& path, bool make, std::string* copy) {
  return open_uncompressed_debug_file(fd, path, debug_file_cache_dir(), make, copy);
}

int open_uncompressed_debug_file(int fd, const std::string& path, const std::string& dir, bool make,
                                 std::string* copy) {
  if (fd < 0 || dir.empty()) return -1;
  ElfPointer source = open_elf(fd);
  if (!source || !scan(source.get(), UINT64_MAX).compressed) return -1;
  const std::string id = internal::elf_build_id(source.get());
  if (id.empty()) return -1;
  const std::string name = id + ".debug";
  const std::string target = dir + "/" + name;
  base::UniqueFd found = open_valid_copy(target, id);
  if (!found.valid() && make) {
    std::string error = make_directories(dir);
    base::UniqueFd dirfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (error.empty() && !dirfd.valid()) error = dir + ": " + std::strerror(errno);
    if (error.empty()) error = write_copy(source.get(), dirfd.get(), name);
    if (error.empty()) found = open_valid_copy(target, id);
    if (error.empty() && !found.valid()) error = "the copy written is not valid";
    if (!error.empty())
      warn_once("cannot keep an uncompressed copy of " + path + " in " + dir + " (" + error +
                "): its DWARF is inflated again on every report");
  }
  if (!found.valid()) return -1;
  *copy = target;
  return found.release();
}

}  // namespace profiling::report
