// An ELF file opened read-only for libelf, and its GNU build id: how the
// symbolizer's rooms open the objects a profile names and the debug files
// found for them (elf_object.h, debug_file_finder.h, debug_file_cache.h).
// Not async-signal-safe (allocates; host side only). An ElfFile is one
// owner's: it owns its descriptor and Elf handle until release(). Caches
// nothing. libelf's version is set once per process (init_libelf), which is
// safe from any thread.
#ifndef PROFIL_REPORT_INTERNAL_ELF_FILE_H
#define PROFIL_REPORT_INTERNAL_ELF_FILE_H

#include <libelf.h>

#include <cstddef>
#include <string>

namespace profiling::report::internal {

// elf_version(EV_CURRENT), which libelf wants before any elf_begin.
void init_libelf();

// Lowercase hex of bytes ("" for none).
std::string hex(const void* bytes, size_t size);

// The GNU build id of elf in lowercase hex, "" when it has none.
std::string elf_build_id(Elf* elf);

// An open ELF file; closes itself.
struct ElfFile {
  int fd = -1;
  Elf* elf = nullptr;
  std::string path;

  ElfFile() = default;
  ElfFile(const ElfFile&) = delete;
  ElfFile& operator=(const ElfFile&) = delete;
  ~ElfFile();
  // Empty string on success, the reason otherwise; elf is then still set
  // when the file is there and regular but not an ELF object.
  std::string open(const std::string& file);
  std::string build_id() const { return elf_build_id(elf); }
  // The descriptor, for another library to own; this no longer closes it.
  int release();
};

}  // namespace profiling::report::internal

#endif  // PROFIL_REPORT_INTERNAL_ELF_FILE_H
