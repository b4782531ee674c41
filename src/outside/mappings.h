// The executable mappings of the processes the outside sampler samples:
// each process image's code (CodeMap: sorted, disjoint, with the code table
// the unwinder walks the kernel's stack copies with, and the code's bytes
// at the process's addresses), and the objects mapped, each file read once
// (ObjectFiles: by path and build id, through the process's root, and the
// vdso from profil's own). What a profile lists as its mappings is said
// here too (CodeMap::list_into).
//
// NOT async-signal-safe, not thread-safe: the process table's (under the
// sampler's lock).
#ifndef PROFIL_OUTSIDE_MAPPINGS_H
#define PROFIL_OUTSIDE_MAPPINGS_H

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "format/profile.h"
#include "outside/image.h"
#include "unwind/code_table.h"
#include "unwind/memory.h"

namespace profiling::outside {

// One executable mapping of a process.
struct MappedCode {
  uint64_t start = 0, end = 0, file_offset = 0;
  std::string path;
  std::string build_id;
  std::shared_ptr<const ImageMemory> memory;  // null: its file could not be read
  // Its rows, for an object with an .eh_frame and no .eh_frame_hdr.
  std::shared_ptr<const std::vector<unwind::Row>> rows;
};

// The objects behind the mappings, read once for every process that maps
// them while one of them still does.
class ObjectFiles {
 public:
  // A mapping of pid's with its object read (null memory when it cannot
  // be: anonymous code, a file replaced since it was mapped) and, for an
  // object without an .eh_frame_hdr, its rows.
  MappedCode map(pid_t pid, uint64_t start, uint64_t end, uint64_t offset, const std::string& path,
                 const std::string& build_id);

 private:
  std::shared_ptr<const ImageMemory> memory_for(pid_t pid, uint64_t start, uint64_t offset, uint64_t length,
                                                const std::string& path, const std::string& build_id);

  std::unordered_map<std::string, std::weak_ptr<const ElfImage>> files_;
  std::shared_ptr<const ElfImage> vdso_;
};

// One process image's code.
class CodeMap final : public unwind::MemoryReader {
 public:
  CodeMap() = default;
  // A forked child's: the same mappings; its table is built when first
  // needed.
  CodeMap forked() const {
    CodeMap child;
    child.code_ = code_;
    return child;
  }

  // What it covers was unmapped first (mmap over old mappings).
  void add(MappedCode m);
  // The executable lines of /proc/PID/maps.
  void add_from_proc(ObjectFiles& files, pid_t pid, const std::string& maps);
  const std::vector<MappedCode>& code() const { return code_; }
  // Whether address lies in this image's code.
  bool covers(uint64_t address) const;
  // The table the unwinder walks, built again after a change.
  const unwind::CodeTable* table();
  // The image's code read at the process's addresses: the bytes of a signal
  // trampoline (unwinder.cc) the kernel's stack copy does not hold.
  bool read(uint64_t address, uint64_t* value) const override;
  // The profile's mappings: the main executable's first, as
  // format/profile.h asks; anonymous code as "[anon]".
  void list_into(format::Profile* profile) const;

 private:
  std::vector<MappedCode> code_;  // sorted by start, disjoint
  std::unique_ptr<unwind::CodeTable> table_;
  bool table_stale_ = true;
};

}  // namespace profiling::outside

#endif  // PROFIL_OUTSIDE_MAPPINGS_H
