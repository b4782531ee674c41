#include "report/internal/debug_file_finder.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "report/debug_file_cache.h"
#include "report/internal/elf_file.h"

namespace profiling::report::internal {

std::string module_build_id(Dwfl_Module* module) {
  const unsigned char* bits = nullptr;
  GElf_Addr note_address = 0;
  const int size = dwfl_module_build_id(module, &bits, &note_address);
  return size > 0 ? hex(bits, static_cast<size_t>(size)) : std::string();
}

DebugFileFinder::DebugFileFinder(std::string debug_root, bool copy_debug_files)
    : debug_root_(std::move(debug_root)), copy_debug_files_(copy_debug_files) {
  debuginfo_path_ = ":.debug:" + debug_root_;
  debuginfo_path_pointer_ = debuginfo_path_.data();
  callbacks_.find_elf = dwfl_build_id_find_elf;
  callbacks_.find_debuginfo = &DebugFileFinder::find_debuginfo;
  callbacks_.section_address = dwfl_offline_section_address;
  callbacks_.debuginfo_path = &debuginfo_path_pointer_;
}

void DebugFileFinder::adopt(Dwfl_Module* module) {
  void** user_data = nullptr;
  dwfl_module_info(module, &user_data, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
  if (user_data) *user_data = this;
}

// libdwfl's find_debuginfo callback. First the object's debug file by
// its build id under the debug root, looked up here rather than by
// libdwfl's dwfl_build_id_find_debuginfo: that one keeps the Elf it
// opened (libdwfl/dwfl_build_id_find_debuginfo.c sets mod->debug.elf), so
// an uncompressed copy returned in its place would go unread. Then, with
// DEBUGINFOD_URLS, libdwfl's standard search (the build id, then
// .gnu_debuglink, then the servers), with the progress line around it.
// Without, the same search but its last step: there libdwfl 0.188 loads
// libdebuginfod, and with it libcurl and its TLS libraries (15 ms of
// CPU), to find that no server is named. Once the DWARF is read libdwfl
// asks again, for the dwz file .gnu_debugaltlink names
// (find_debug_altlink passes its path with a CRC of 0); that one it opens
// from the descriptor.
int DebugFileFinder::find_debuginfo(Dwfl_Module* module, void** user_data, const char* module_name,
                                    Dwarf_Addr base, const char* file_name, const char* debug_link,
                                    GElf_Word debug_link_crc, char** debug_file_name) {
  // The module's user data is the finder (adopt).
  auto* self = static_cast<DebugFileFinder*>(*user_data);
  const bool altlink = debug_link != nullptr && debug_link_crc == 0;
  const std::string build_id = self ? module_build_id(module) : std::string();
  if (self && !altlink) {
    std::string found;
    const int fd = build_id.size() > 2 ? self->open_installed_debug_file(build_id, &found) : -1;
    if (fd >= 0) {
      *debug_file_name = strdup(found.c_str());
      return fd;
    }
  }
  if (self && self->debuginfod_.enabled()) {
    self->debuginfod_.begin(file_name ? file_name : module_name);
    const int fd = dwfl_standard_find_debuginfo(module, user_data, module_name, base, file_name, debug_link,
                                                debug_link_crc, debug_file_name);
    self->debuginfod_.end(fd >= 0);
    return self->uncompressed(fd, *debug_file_name);
  }
  const int fd = dwfl_build_id_find_debuginfo(module, user_data, module_name, base, file_name, debug_link,
                                              debug_link_crc, debug_file_name);
  if (self == nullptr) return fd;
  if (fd >= 0) return altlink ? self->uncompressed(fd, *debug_file_name) : fd;
  if (file_name == nullptr || debug_link == nullptr) return fd;
  return self->uncompressed(self->open_debug_link(file_name, debug_link, build_id, debug_file_name),
                            *debug_file_name);
}

// The debug file at fd, or in its place its uncompressed copy, which
// libdw reads without inflating (debug_file_cache.h). The file keeps its
// name (ElfObject::symbol_file): the copy holds the same bytes once
// inflated.
int DebugFileFinder::uncompressed(int fd, const char* name) {
  if (fd < 0) return fd;
  std::string copy;
  const int copy_fd = open_uncompressed_debug_file(fd, name ? name : "", copy_debug_files_, &copy);
  if (copy_fd < 0) return fd;
  close(fd);
  debug_copy_ = copy;
  return copy_fd;
}

// .gnu_debuglink's file next to the object, in its .debug/ directory and
// under the debug root (gdb manual, "Separate Debug Files"); one with
// another build id than the object's (build_id) would give wrong names.
int DebugFileFinder::open_debug_link(const std::string& path, const std::string& link, const std::string& build_id,
                                     char** found) const {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  for (const std::string& candidate : {dir + "/" + link, dir + "/.debug/" + link,
                                       debug_root_ + (dir.starts_with("/") ? "" : "/") + dir + "/" + link}) {
    if (candidate == path) continue;
    ElfFile debug;
    if (!debug.open(candidate).empty()) continue;
    const std::string id = debug.build_id();
    if (!build_id.empty() && !id.empty() && id != build_id) continue;
    *found = strdup(candidate.c_str());
    return debug.release();
  }
  return -1;
}

// <debug root>/.build-id/xx/yyyy.debug (gdb manual, "Separate Debug
// Files"), or its uncompressed copy.
int DebugFileFinder::open_installed_debug_file(const std::string& id, std::string* found) {
  const std::string candidate = debug_root_ + "/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug";
  ElfFile debug;
  if (!debug.open(candidate).empty() || debug.build_id() != id) return -1;
  *found = candidate;
  return uncompressed(debug.release(), found->c_str());
}

int DebugFileFinder::open_by_build_id(const std::string& path, const std::string& id, std::string* found) {
  if (const int fd = open_installed_debug_file(id, found); fd >= 0) return fd;
  return uncompressed(debuginfod_.find_debuginfo(path, id, found), found->c_str());
}

}  // namespace profiling::report::internal
