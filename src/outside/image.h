// Another process's code, read from its files: an ELF object mapped
// read-only into profil's own address space, and read at the addresses the
// profiled process sees it at. The outside sampler unwinds the kernel's
// stack copies with the object's own .eh_frame_hdr and .eh_frame this way,
// through the same CFI code the preload runs in its handler
// (unwind/internal/cfi.h), and nothing is read from the process itself.
//
// NOT async-signal-safe (open, mmap, allocation): host side only. Reads
// (ImageMemory::read, in_place) are plain memory reads of a private
// read-only mapping, bounds-checked.
#ifndef PROFIL_OUTSIDE_IMAGE_H
#define PROFIL_OUTSIDE_IMAGE_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "unwind/memory.h"

namespace profiling::outside {

struct Segment {
  uint64_t vaddr = 0, memsz = 0;
  uint64_t offset = 0, filesz = 0;
  bool executable = false;
};

class ElfImage {
 public:
  // The object at path (opened as it is named: a caller reaches another
  // mount namespace through /proc/PID/root). nullptr when it cannot be read
  // or is not a 64-bit little-endian ELF object; *why says which.
  static std::shared_ptr<const ElfImage> open(const std::string& path, std::string* why);
  // An object already in this process's memory, laid out as loaded (the
  // vdso: the kernel gives every process the same one).
  static std::shared_ptr<const ElfImage> from_loaded(const void* base, size_t size);
  ~ElfImage();
  ElfImage(const ElfImage&) = delete;
  ElfImage& operator=(const ElfImage&) = delete;

  const std::vector<Segment>& loads() const { return loads_; }
  uint64_t eh_frame_hdr_vaddr() const { return eh_frame_hdr_; }  // 0: none
  const std::string& build_id() const { return build_id_; }      // lowercase hex, "" when none
  bool has_interpreter() const { return has_interpreter_; }      // PT_INTERP: a dynamic program
  // The .eh_frame section (from the section headers), vaddr 0 when none.
  uint64_t eh_frame_vaddr() const { return eh_frame_vaddr_; }
  uint64_t eh_frame_size() const { return eh_frame_size_; }
  // The load bias of a mapping of this object at address, file offset
  // file_offset (an MMAP2 record): address - vaddr of what is mapped there.
  bool bias_of(uint64_t address, uint64_t file_offset, uint64_t* bias) const;
  // The bytes of [vaddr, vaddr + size) as the file holds them (a loaded
  // segment's file part), or nullptr.
  const uint8_t* at_vaddr(uint64_t vaddr, size_t size) const;

 private:
  ElfImage() = default;
  bool parse();

  const uint8_t* bytes_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;  // bytes_ is ours to munmap
  bool loaded_layout_ = false;  // from_loaded: file offsets are vaddrs
  std::vector<Segment> loads_;
  uint64_t eh_frame_hdr_ = 0;
  bool has_interpreter_ = false;
  uint64_t eh_frame_vaddr_ = 0, eh_frame_size_ = 0;
  std::string build_id_;
};

// An ElfImage read at the addresses one mapping of it has in the profiled
// process (bias: its load bias there).
class ImageMemory final : public unwind::MemoryReader {
 public:
  ImageMemory(std::shared_ptr<const ElfImage> image, uint64_t bias) : image_(std::move(image)), bias_(bias) {}
  bool read(uint64_t address, uint64_t* value) const override;
  const uint8_t* in_place(uint64_t address, size_t size) const override;
  const ElfImage& image() const { return *image_; }
  uint64_t bias() const { return bias_; }

 private:
  std::shared_ptr<const ElfImage> image_;
  uint64_t bias_;
};

}  // namespace profiling::outside

#endif  // PROFIL_OUTSIDE_IMAGE_H
