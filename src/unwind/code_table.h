// Where the unwinder finds how to step from a frame to its caller: the
// loaded objects (listed outside any signal handler) and, for a PC, the
// rule of the CFI covering it, interpreted on demand from the object's own
// .eh_frame_hdr and .eh_frame in the handler (internal/cfi.h row_at), with
// a small lock-free cache of the rows found.
//
// Why on demand: building the rows of every FDE of every object at start
// cost each profiled process ~2.7 ms of CPU (~5,200 FDEs for /bin/true with
// libc; cc1 ~60 ms), paid again by each process of a build; a sample
// needs the rows of the 10-20 PCs of its stack, mostly the same ones.
//
// Why in the handler and not offline: copying the top of the stack for a
// later DWARF unwind (perf record --call-graph dwarf) costs kilobytes per
// sample and cannot be deduplicated when it is taken; a stack unwound in
// the handler is a few return addresses that the stack table (stack_table.h)
// stores once per distinct stack. The CFI is reduced, as async-profiler
// does, to the few rules x86-64 compilers emit: the CFA (the caller's rsp)
// is rsp or rbp plus an offset, the return address is at CFA-8, rbp is
// unchanged or saved at CFA-k. What does not fit is either a known special
// case (PLT stubs, stack realignment through rbp) or marked "walk the frame
// pointer".
//
// build() is NOT async-signal-safe (dl_iterate_phdr, allocation); find()
// and object_of() are ASYNC-SIGNAL-SAFE and lock-free: a built table's
// object list is immutable, its cache is written with a per-entry try-lock.
#ifndef PROFIL_UNWIND_CODE_TABLE_H
#define PROFIL_UNWIND_CODE_TABLE_H

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "unwind/memory.h"

namespace profiling::unwind {

// How to find the caller's frame at a range of PCs.
enum class Rule : uint8_t {
  kNone = 0,         // no CFI covers these PCs: walk the frame pointer
  kCfaRsp,           // CFA = rsp + cfa_offset
  kCfaRbp,           // CFA = rbp + cfa_offset
  kCfaRbpDeref,      // CFA = *(rbp + cfa_offset) (a realigned stack's DRAP)
  kPlt,              // CFA = rsp + cfa_offset, + 8 when (pc & 15) >= rbp_offset
  kFramePointer,     // CFI this form cannot express: walk the frame pointer
  kOutermost,        // the return address is undefined: _start, a thread's start
};

// How rbp is recovered in the caller.
enum class RbpRule : uint8_t {
  kUnchanged = 0,
  kAtCfa,  // saved at CFA + rbp_offset
  kAtRbp,  // saved at rbp + rbp_offset (a realigned stack's frame)
};

// One row: from start (an offset in its object, where a whole object's rows
// are listed: internal/cfi.h compact_rows) to the next row's start.
struct Row {
  uint32_t start;
  int32_t cfa_offset;
  int16_t rbp_offset;
  Rule rule;
  RbpRule rbp;
};
static_assert(sizeof(Row) == 12);

// One loaded object with executable code.
struct ObjectTable {
  uint64_t start = 0;  // lowest executable address
  uint64_t end = 0;    // exclusive
  uint64_t eh_frame_hdr = 0;    // its PT_GNU_EH_FRAME, 0 when none
  uint64_t eh_frame_limit = 0;  // the end of the loaded bytes of the segment holding it (and the .eh_frame)
  std::string name;
  // Where the CFI is read: for an object of this process (build()), its
  // loaded bytes through fault-safe loads (LiveMemory); for another
  // process's object (the outside sampler), its file mapped here, read at
  // that process's addresses (outside/image.h). Null: no CFI is read (the
  // frame pointer is walked).
  std::shared_ptr<const MemoryReader> image;
  // For an object with an .eh_frame and no .eh_frame_hdr to search it by
  // (static glibc programs: gcc -static links without --eh-frame-hdr):
  // its rows, built whole beforehand (internal::compact_rows, offsets from
  // start), binary-searched instead. Outside sampler only.
  std::shared_ptr<const std::vector<Row>> rows;
};

class CodeTable {
 public:
  // Every object dl_iterate_phdr reports (the program, its libraries, the
  // vdso), reusing the objects of previous that are still loaded at the same
  // place. Not async-signal-safe; cheap (no CFI is read).
  static std::unique_ptr<CodeTable> build(const CodeTable* previous = nullptr);
  ~CodeTable();

  // The row for pc into *row: false when pc lies in no object we know (code
  // loaded since the build, JIT code). A PC in no FDE gets Rule::kNone, CFI
  // that cannot be read or followed Rule::kFramePointer. ASYNC-SIGNAL-SAFE
  // (reads the object's CFI through fault-safe loads: the sampler's fault
  // guard must be installed).
  bool find(uint64_t pc, Row* row) const;

  // The object holding pc, or nullptr. ASYNC-SIGNAL-SAFE.
  const ObjectTable* object_of(uint64_t pc) const;

  // Set by the unwinder when it met a PC in no object: a library loaded
  // without dlopen being seen (a static program), so a rebuild is due.
  void note_unknown_pc() const { saw_unknown_pc_.store(true, std::memory_order_relaxed); }
  bool saw_unknown_pc() const { return saw_unknown_pc_.load(std::memory_order_relaxed); }

  size_t object_count() const { return objects_.size(); }
  const std::vector<std::shared_ptr<const ObjectTable>>& objects() const { return objects_; }

  // For tests: a table of the given objects.
  static std::unique_ptr<CodeTable> from_objects(std::vector<std::shared_ptr<const ObjectTable>> objects);

 private:
  CodeTable() = default;
  // Rows found, by PC (a direct-mapped cache). key: the PC, 0 when empty,
  // kLockedKey while being written; row: the Row packed in 64 bits.
  struct CacheEntry {
    std::atomic<uint64_t> key;
    std::atomic<uint64_t> row;
  };
  static constexpr size_t kCacheEntries = 16384;
  static constexpr uint64_t kLockedKey = 1;  // never a PC (the unwinder wants >= 4096)
  void map_cache();

  std::vector<std::shared_ptr<const ObjectTable>> objects_;  // sorted by start, disjoint
  CacheEntry* cache_ = nullptr;  // mmap'ed, kCacheEntries (untouched pages cost nothing)
  mutable std::atomic<bool> saw_unknown_pc_{false};
};

}  // namespace profiling::unwind

#endif  // PROFIL_UNWIND_CODE_TABLE_H
