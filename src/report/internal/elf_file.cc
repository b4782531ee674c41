#include "report/internal/elf_file.h"

#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace profiling::report::internal {

void init_libelf() {
  static const bool ready = elf_version(EV_CURRENT) != EV_NONE;
  (void)ready;
}

std::string hex(const void* bytes, size_t size) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  const auto* p = static_cast<const unsigned char*>(bytes);
  for (size_t i = 0; i < size; ++i) {
    out += digits[p[i] >> 4];
    out += digits[p[i] & 15];
  }
  return out;
}

std::string elf_build_id(Elf* elf) {
  const void* bytes = nullptr;
  const ssize_t size = dwelf_elf_gnu_build_id(elf, &bytes);
  return size > 0 ? hex(bytes, static_cast<size_t>(size)) : std::string();
}

ElfFile::~ElfFile() {
  if (elf) elf_end(elf);
  if (fd >= 0) close(fd);
}

std::string ElfFile::open(const std::string& file) {
  init_libelf();
  path = file;
  // A profile names any path it likes: a FIFO there must not block the
  // open (O_NONBLOCK) and a device must not be read; only regular files
  // are objects.
  fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return std::strerror(errno);
  struct stat st;
  if (::fstat(fd, &st) != 0) return std::strerror(errno);
  if (!S_ISREG(st.st_mode)) return S_ISDIR(st.st_mode) ? std::strerror(EISDIR) : "not a regular file";
  elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  if (elf == nullptr || elf_kind(elf) != ELF_K_ELF) return "not an ELF object";
  return {};
}

int ElfFile::release() {
  if (elf) elf_end(elf);
  elf = nullptr;
  const int out = fd;
  fd = -1;
  return out;
}

}  // namespace profiling::report::internal
