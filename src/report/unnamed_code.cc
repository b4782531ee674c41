#include "report/unnamed_code.h"

#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "report/symbolizer.h"

namespace profiling::report {

// An object's FDEs: which addresses one covers (libdw's
// dwarf_cfi_addrframe, the search an unwinder does), and where each begins,
// from the sorted table of .eh_frame_hdr (the PT_GNU_EH_FRAME segment;
// LSB 5.0, "Exception Frame Header"). dwarf_frame_info's range is that of
// one CFI row (a function has several: each push and pop), not the FDE's;
// FDEs do not overlap, so the one covering an address is the last to
// begin at or before it.
struct UnnamedCode::Object {
  int fd = -1;
  Elf* elf = nullptr;
  Dwarf_CFI* cfi = nullptr;
  std::vector<uint64_t> starts;  // sorted FDE initial locations (link-time)

  explicit Object(const std::string& path) {
    if (elf_version(EV_CURRENT) == EV_NONE) return;
    // O_NONBLOCK and the regular-file check: a profile names any path it
    // likes (a FIFO must not block the report), as the symbolizer opens it.
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    if (fd < 0 || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return;
    elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
    if (elf == nullptr || elf_kind(elf) != ELF_K_ELF) return;
    cfi = dwarf_getcfi_elf(elf);
    read_header_table();
  }
  ~Object() {
    if (cfi) dwarf_cfi_end(cfi);
    if (elf) elf_end(elf);
    if (fd >= 0) ::close(fd);
  }

  // The table's encoding is DW_EH_PE_datarel | DW_EH_PE_sdata4 (0x3b), the
  // one GNU ld, gold and lld write: pairs of 4-byte (initial location, FDE)
  // offsets from the header's own address. Any other leaves starts empty.
  void read_header_table() {
    size_t count = 0, size = 0;
    const char* file = elf_rawfile(elf, &size);
    if (file == nullptr || elf_getphdrnum(elf, &count) != 0) return;
    for (size_t i = 0; i < count; ++i) {
      GElf_Phdr header;
      if (!gelf_getphdr(elf, static_cast<int>(i), &header) || header.p_type != PT_GNU_EH_FRAME) continue;
      if (header.p_offset > size || header.p_filesz > size - header.p_offset || header.p_filesz < 4) return;
      const auto* bytes = reinterpret_cast<const uint8_t*>(file + header.p_offset);
      const uint8_t version = bytes[0], frame_encoding = bytes[1], count_encoding = bytes[2], table_encoding = bytes[3];
      const size_t pointer = (frame_encoding & 0x0f) == 0x03 || (frame_encoding & 0x0f) == 0x0b   ? 4
                             : (frame_encoding & 0x0f) == 0x04 || (frame_encoding & 0x0f) == 0x0c ? 8
                                                                                                  : 0;
      if (version != 1 || pointer == 0 || count_encoding != 0x03 || table_encoding != 0x3b) return;
      size_t at = 4 + pointer;
      uint32_t fdes = 0;
      if (header.p_filesz < at + 4) return;
      std::memcpy(&fdes, bytes + at, 4);
      at += 4;
      if ((header.p_filesz - at) / 8 < fdes) return;
      starts.reserve(fdes);
      for (uint32_t f = 0; f < fdes; ++f, at += 8) {
        int32_t relative = 0;
        std::memcpy(&relative, bytes + at, 4);
        starts.push_back(header.p_vaddr + static_cast<uint64_t>(static_cast<int64_t>(relative)));
      }
      std::sort(starts.begin(), starts.end());  // sorted by the linker; not trusted
      return;
    }
  }

  // The start of the FDE covering file_address; false when none does.
  bool start_of(uint64_t file_address, uint64_t* start) const {
    if (cfi == nullptr || starts.empty()) return false;
    Dwarf_Frame* frame = nullptr;
    if (dwarf_cfi_addrframe(cfi, file_address, &frame) != 0) return false;
    std::free(frame);  // dwarf_cfi_addrframe: the caller frees it
    auto it = std::upper_bound(starts.begin(), starts.end(), file_address);
    if (it == starts.begin()) return false;
    *start = *(it - 1);
    return true;
  }
};

UnnamedCode::UnnamedCode() = default;
UnnamedCode::~UnnamedCode() = default;

void UnnamedCode::name(const std::string& path, Symbol* symbol) {
  auto [it, inserted] = objects_.try_emplace(path);
  if (inserted) it->second = std::make_unique<Object>(path);
  uint64_t start = symbol->file_address;
  it->second->start_of(symbol->file_address, &start);
  symbol->function = fmt::format("{}+{:#x}", object_basename(path), start);
  symbol->function_address = start;
}

}  // namespace profiling::report
