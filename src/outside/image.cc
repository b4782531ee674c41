#include "outside/image.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/unique_fd.h"

namespace profiling::outside {

std::shared_ptr<const ElfImage> ElfImage::open(const std::string& path, std::string* why) {
  base::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    *why = std::strerror(errno);
    return nullptr;
  }
  struct stat st{};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < static_cast<off_t>(sizeof(Elf64_Ehdr))) {
    *why = "not a regular file of an ELF header's size";
    return nullptr;
  }
  void* map = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd.get(), 0);
  if (map == MAP_FAILED) {
    *why = std::strerror(errno);
    return nullptr;
  }
  auto image = std::shared_ptr<ElfImage>(new ElfImage());
  image->bytes_ = static_cast<const uint8_t*>(map);
  image->size_ = static_cast<size_t>(st.st_size);
  image->mapped_ = true;
  if (!image->parse()) {
    *why = "not a 64-bit ELF object";
    return nullptr;
  }
  return image;
}

std::shared_ptr<const ElfImage> ElfImage::from_loaded(const void* base, size_t size) {
  auto image = std::shared_ptr<ElfImage>(new ElfImage());
  image->bytes_ = static_cast<const uint8_t*>(base);
  image->size_ = size;
  image->loaded_layout_ = true;
  if (!image->parse()) return nullptr;
  return image;
}

ElfImage::~ElfImage() {
  if (mapped_) ::munmap(const_cast<uint8_t*>(bytes_), size_);
}

bool ElfImage::parse() {
  Elf64_Ehdr eh;
  std::memcpy(&eh, bytes_, sizeof eh);
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_phentsize != sizeof(Elf64_Phdr))
    return false;
  if (eh.e_phoff > size_ || eh.e_phnum > (size_ - eh.e_phoff) / sizeof(Elf64_Phdr)) return false;
  for (unsigned i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    std::memcpy(&ph, bytes_ + eh.e_phoff + i * sizeof ph, sizeof ph);
    if (ph.p_type == PT_LOAD) {
      loads_.push_back({ph.p_vaddr, ph.p_memsz, loaded_layout_ ? ph.p_vaddr : ph.p_offset, ph.p_filesz,
                        (ph.p_flags & PF_X) != 0});
    } else if (ph.p_type == PT_INTERP) {
      has_interpreter_ = true;
    } else if (ph.p_type == PT_GNU_EH_FRAME) {
      eh_frame_hdr_ = ph.p_vaddr;
    } else if (ph.p_type == PT_NOTE) {
      // NT_GNU_BUILD_ID in a note segment (elf(5)).
      const uint64_t from = loaded_layout_ ? ph.p_vaddr : ph.p_offset;
      if (from > size_ || ph.p_filesz > size_ - from) continue;
      uint64_t at = 0;
      while (at + sizeof(Elf64_Nhdr) <= ph.p_filesz) {
        Elf64_Nhdr nh;
        std::memcpy(&nh, bytes_ + from + at, sizeof nh);
        const uint64_t name_at = at + sizeof nh;
        const uint64_t desc_at = name_at + ((nh.n_namesz + 3) & ~3u);
        const uint64_t next = desc_at + ((nh.n_descsz + 3) & ~3u);
        if (next > ph.p_filesz) break;
        if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && std::memcmp(bytes_ + from + name_at, "GNU", 4) == 0) {
          static const char hex[] = "0123456789abcdef";
          build_id_.clear();
          for (uint32_t k = 0; k < nh.n_descsz; ++k) {
            const uint8_t byte = bytes_[from + desc_at + k];
            build_id_ += hex[byte >> 4];
            build_id_ += hex[byte & 15];
          }
        }
        at = next;
      }
    }
  }
  // Section headers, for an .eh_frame without a header to search it by.
  if (!loaded_layout_ && eh.e_shoff != 0 && eh.e_shentsize == sizeof(Elf64_Shdr) && eh.e_shoff <= size_ &&
      eh.e_shnum <= (size_ - eh.e_shoff) / sizeof(Elf64_Shdr) && eh.e_shstrndx < eh.e_shnum) {
    Elf64_Shdr names;
    std::memcpy(&names, bytes_ + eh.e_shoff + eh.e_shstrndx * sizeof names, sizeof names);
    for (unsigned i = 0; i < eh.e_shnum && names.sh_offset < size_; ++i) {
      Elf64_Shdr sh;
      std::memcpy(&sh, bytes_ + eh.e_shoff + i * sizeof sh, sizeof sh);
      if (sh.sh_type != SHT_PROGBITS || sh.sh_name >= names.sh_size || names.sh_offset + sh.sh_name >= size_) continue;
      const char* name = reinterpret_cast<const char*>(bytes_ + names.sh_offset + sh.sh_name);
      if (std::strncmp(name, ".eh_frame", 10) == 0 && sh.sh_addr != 0) {
        eh_frame_vaddr_ = sh.sh_addr;
        eh_frame_size_ = sh.sh_size;
      }
    }
  }
  return !loads_.empty();
}

bool ElfImage::bias_of(uint64_t address, uint64_t file_offset, uint64_t* bias) const {
  // The segment whose file bytes hold file_offset (its page-aligned start:
  // a segment's first page may begin before p_offset).
  for (const Segment& s : loads_) {
    const uint64_t page_start = s.offset & ~uint64_t{4095};
    if (file_offset >= page_start && file_offset < s.offset + (s.filesz ? s.filesz : 1)) {
      *bias = address - file_offset + s.offset - s.vaddr;
      return true;
    }
  }
  return false;
}

const uint8_t* ElfImage::at_vaddr(uint64_t vaddr, size_t size) const {
  for (const Segment& s : loads_) {
    if (vaddr >= s.vaddr && vaddr - s.vaddr <= s.filesz && size <= s.filesz - (vaddr - s.vaddr)) {
      const uint64_t offset = s.offset + (vaddr - s.vaddr);
      if (offset > size_ || size > size_ - offset) return nullptr;
      return bytes_ + offset;
    }
  }
  return nullptr;
}

bool ImageMemory::read(uint64_t address, uint64_t* value) const {
  const uint8_t* bytes = image_->at_vaddr(address - bias_, 8);
  if (bytes == nullptr) return false;
  std::memcpy(value, bytes, 8);
  return true;
}

const uint8_t* ImageMemory::in_place(uint64_t address, size_t size) const {
  return image_->at_vaddr(address - bias_, size);
}

}  // namespace profiling::outside
