// Compact unwind tables for the code loaded in the process, built from each
// object's .eh_frame outside any signal handler, searched inside it.
//
// Why in the handler and not offline: copying the top of the stack for a
// later DWARF unwind (perf record --call-graph dwarf) costs kilobytes per
// sample and cannot be deduplicated when it is taken; a stack unwound in
// the handler is a few return addresses that the stack table (stack_table.h)
// stores once per distinct stack. The CFI is reduced ahead of time, as
// async-profiler does, to the few rules x86-64 compilers emit: the CFA
// (the caller's rsp) is rsp or rbp plus an offset, the return address is at
// CFA-8, rbp is unchanged or saved at CFA-k. What does not fit is either a
// known special case (PLT stubs, stack realignment through rbp) or marked
// "walk the frame pointer".
//
// build() is NOT async-signal-safe (dl_iterate_phdr, allocation); find() is
// ASYNC-SIGNAL-SAFE and lock-free: a built table is immutable.
#ifndef PROFIL_UNWIND_CODE_TABLE_H
#define PROFIL_UNWIND_CODE_TABLE_H

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

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

// One row: from start (an offset in its object) to the next row's start.
struct Row {
  uint32_t start;
  int32_t cfa_offset;
  int16_t rbp_offset;
  Rule rule;
  RbpRule rbp;
};
static_assert(sizeof(Row) == 12);

// The rows of one loaded object's executable segments.
struct ObjectTable {
  uint64_t start = 0;  // lowest executable address
  uint64_t end = 0;    // exclusive
  uint64_t eh_frame_hdr = 0;
  std::string name;
  std::vector<Row> rows;  // sorted by start; the first starts at 0
  // For each 256-byte page of [start, end), the row covering the page's first
  // byte: find() searches only the rows of one page (a few) instead of
  // all of them (cc1 has half a million).
  std::vector<uint32_t> page_rows;
  void index_pages();
};

class CodeTable {
 public:
  // Every object dl_iterate_phdr reports (the program, its libraries, the
  // vdso), reusing the objects of previous that are still loaded at the same
  // place (a dlopen rebuilds only what it added). Not async-signal-safe.
  static std::unique_ptr<CodeTable> build(const CodeTable* previous = nullptr);

  // The row for pc, or nullptr when pc lies in no object we know (code
  // loaded since the build, JIT code). ASYNC-SIGNAL-SAFE.
  const Row* find(uint64_t pc) const;

  // The object holding pc, or nullptr. ASYNC-SIGNAL-SAFE.
  const ObjectTable* object_of(uint64_t pc) const;

  // Set by the unwinder when it met a PC in no object: a library loaded
  // without dlopen being seen (a static program), so a rebuild is due.
  void note_unknown_pc() const { saw_unknown_pc_.store(true, std::memory_order_relaxed); }
  bool saw_unknown_pc() const { return saw_unknown_pc_.load(std::memory_order_relaxed); }

  size_t object_count() const { return objects_.size(); }
  size_t row_count() const;
  const std::vector<std::shared_ptr<const ObjectTable>>& objects() const { return objects_; }

  // For tests: a table of the given objects.
  static std::unique_ptr<CodeTable> from_objects(std::vector<std::shared_ptr<const ObjectTable>> objects);

 private:
  std::vector<std::shared_ptr<const ObjectTable>> objects_;  // sorted by start, disjoint
  mutable std::atomic<bool> saw_unknown_pc_{false};
};

}  // namespace profiling::unwind

#endif  // PROFIL_UNWIND_CODE_TABLE_H
