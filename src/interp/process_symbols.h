// What the interpreter finders (python_process.h, ruby_process.h) read of
// a process before they read its memory: the files it maps, and the
// symbols they want from one of those files with the load bias of its
// mapping.
//
// NOT async-signal-safe: host side (reads /proc, opens ELF files with
// libelf, allocates).
#ifndef PROFIL_INTERP_PROCESS_SYMBOLS_H
#define PROFIL_INTERP_PROCESS_SYMBOLS_H

#include <sys/types.h>

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>

namespace profiling::interp {

struct MappedFile {
  uint64_t start = 0, offset = UINT64_MAX;  // its mapping of lowest file offset
};

// The files mapped in pid (/proc/PID/maps), each with its mapping of lowest
// file offset.
std::map<std::string, MappedFile> mapped_files(pid_t pid);

struct ElfSymbols {
  std::map<std::string, uint64_t> values;  // the wanted symbols found (file addresses)
  std::map<std::string, uint64_t> sizes;   // and their sizes
  uint64_t bias = 0;                       // add to a value for its address in the process
  bool ok = false;                         // false: *why says why
  uint64_t at(const std::string& name) const {
    const auto it = values.find(name);
    return it == values.end() ? 0 : it->second + bias;
  }
};

// The wanted symbols of file (dynamic and .symtab; a TLS symbol's value is
// its offset in the file's TLS block, bias not to be added), and the load
// bias of its mapping at `mapping`.
ElfSymbols read_symbols(const std::string& file, const MappedFile& mapping,
                        std::initializer_list<const char*> wanted, std::string* why);

}  // namespace profiling::interp

#endif  // PROFIL_INTERP_PROCESS_SYMBOLS_H
