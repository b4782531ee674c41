#include "report/internal/elf_object.h"

#include <gelf.h>
#include <unistd.h>

#include "report/demangle.h"
#include "report/internal/elf_file.h"

namespace profiling::report {

ElfObject::ElfObject(const std::string& debug_root, bool copy_debug_files) : finder_(debug_root, copy_debug_files) {}

ElfObject::~ElfObject() {
  if (dwfl_) dwfl_end(dwfl_);
}

std::string ElfObject::load(const std::string& path, const std::string& profile_build_id) {
  internal::init_libelf();
  dwfl_ = dwfl_begin(finder_.callbacks());
  if (dwfl_ == nullptr) return dwfl_errmsg(-1);
  finder_.attach(dwfl_);

  internal::ElfFile file;
  std::string reported = path;
  int fd = -1;
  if (std::string error = file.open(path); !error.empty()) {
    // The program is gone (or is not what it was): the debug file its
    // build id names keeps its program headers and symbols (objcopy(1)
    // --only-keep-debug), so the profile's addresses still resolve.
    if (file.elf != nullptr || profile_build_id.size() <= 2) return error;
    fd = finder_.open_by_build_id(path, profile_build_id, &reported);
    if (fd < 0) return error;
    debug_file_only_ = true;
  } else {
    fd = file.release();
  }
  // Base 0 with p_vaddr added: module addresses are the object's own
  // link-time addresses, whatever its type (libdwfl.h, dwfl_report_elf).
  dwfl_report_begin(dwfl_);
  module_ = dwfl_report_elf(dwfl_, object_basename(path).c_str(), reported.c_str(), fd, 0, true);
  if (module_ == nullptr) {
    close(fd);
    return dwfl_errmsg(-1);
  }
  dwfl_report_end(dwfl_, nullptr, nullptr);
  finder_.adopt(module_);
  dwarf_.set_module(module_);
  build_id = internal::module_build_id(module_);
  GElf_Addr bias = 0;
  main_elf_ = dwfl_module_getelf(module_, &bias);
  if (main_elf_ == nullptr) return dwfl_errmsg(-1);
  main_path_ = reported;
  size_t count = 0;
  if (elf_getphdrnum(main_elf_, &count) != 0) return "no program headers";
  for (size_t i = 0; i < count; ++i) {
    GElf_Phdr header;
    if (!gelf_getphdr(main_elf_, static_cast<int>(i), &header) || header.p_type != PT_LOAD) continue;
    segments.push_back({header.p_offset, header.p_filesz, header.p_vaddr, header.p_memsz,
                        (header.p_flags & PF_X) != 0});
  }
  // The symbol table is read on the first lookup (ensure_symbols): a
  // report that takes the names from the profile file needs only the
  // program headers (node's 99 MB binary: reading its .dynsym was a
  // quarter of such a report).
  return {};
}

bool ElfObject::to_file_address(const format::Mapping& mapping, uint64_t address, uint64_t* out) const {
  if (address < mapping.start) return false;
  if (debug_file_only_) return to_file_address_by_size(mapping, address, out);
  uint64_t offset = address - mapping.start + mapping.file_offset;
  for (const LoadSegment& segment : segments) {
    if (offset >= segment.file_offset && offset - segment.file_offset < segment.mem_size) {
      *out = offset - segment.file_offset + segment.vaddr;
      return true;
    }
  }
  return false;
}

// A debug file in place of its program keeps the segments' addresses and
// sizes but not their file offsets (objcopy(1) --only-keep-debug moves
// them), so a mapping is matched to the segment whose pages it spans
// (x86-64's 4 KiB pages), the executable one first: profiles sample code.
bool ElfObject::to_file_address_by_size(const format::Mapping& mapping, uint64_t address, uint64_t* out) const {
  constexpr uint64_t kPage = 4096;
  for (bool executable : {true, false}) {
    for (const LoadSegment& segment : segments) {
      if (segment.executable != executable) continue;
      const uint64_t first_page = segment.vaddr & ~(kPage - 1);
      const uint64_t end_page = (segment.vaddr + segment.mem_size + kPage - 1) & ~(kPage - 1);
      if (mapping.limit - mapping.start != end_page - first_page) continue;
      const uint64_t file_address = address - mapping.start + first_page;
      if (file_address < segment.vaddr || file_address - segment.vaddr >= segment.mem_size) return false;
      *out = file_address;
      return true;
    }
  }
  return false;
}

const ElfObject::FunctionSymbol* ElfObject::lookup(uint64_t file_address) {
  ensure_symbols();
  return symbols_.lookup(file_address);
}

const std::string& ElfObject::demangled(const char* raw_name) {
  auto [it, inserted] = names_.try_emplace(raw_name);
  if (inserted) it->second = demangle(raw_name);
  return it->second;
}

std::string ElfObject::symbol_file() {
  ensure_symbols();
  if (symbols_.file() == nullptr || symbols_.file() == main_elf_ || module_ == nullptr) return main_path_;
  const char* debug_file = nullptr;
  dwfl_module_info(module_, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, &debug_file);
  return debug_file ? debug_file : main_path_;
}

void ElfObject::ensure_symbols() {
  if (symbols_read_) return;
  symbols_read_ = true;
  symbols_.read(module_);
}

}  // namespace profiling::report
