// .eh_frame parsing: CIEs, FDEs and their CFA programs, reduced to the
// compact rows of code_table.h (DWARF 5 §6.4; the .eh_frame and
// .eh_frame_hdr encodings of the Linux Standard Base, "Exception Frames").
// row_at() is ASYNC-SIGNAL-SAFE (the unwinder's lookup, in the handler:
// cfi.cc); the whole-section parsers are NOT (they allocate: tests, the
// outside sampler; cfi_tables.cc). Both run one interpreter
// (cfi_program.h, as safe as row_at).
#ifndef PROFIL_UNWIND_INTERNAL_CFI_H
#define PROFIL_UNWIND_INTERNAL_CFI_H

#include <cstddef>
#include <cstdint>
#include <vector>

#include "unwind/code_table.h"
#include "unwind/memory.h"

namespace profiling::unwind::internal {

// Bytes at data, which the program sees at address (the same when parsing
// the live process; a file's section otherwise).
struct Section {
  const uint8_t* data = nullptr;
  size_t size = 0;
  uint64_t address = 0;
};

// A row with its absolute start address.
struct AddressRow {
  uint64_t address;
  Row row;  // row.start unused
};

// One FDE's rows, its code range [start, end).
struct FdeRows {
  uint64_t start;
  uint64_t end;
  std::vector<AddressRow> rows;
};

// The largest FDE and CIE row_at() copies onto the handler's stack; a
// larger one is read in place once its pages answered a fault-safe read.
inline constexpr size_t kMaxFdeBytes = 1024;
inline constexpr size_t kMaxCieBytes = 256;

enum class RowLookup {
  kFound,       // *row is the rule at pc
  kNoFde,       // no FDE covers pc (Rule::kNone: the frame pointer)
  kUnreadable,  // the header, table or entries could not be read or followed
};

// ASYNC-SIGNAL-SAFE. The row at pc of a loaded object, interpreted on
// demand (as libunwind's local mode does): the object's .eh_frame_hdr at
// hdr, its search table binary-searched, the FDE found and its CIE read
// through memory (fault-safe reads: an object already unloaded is
// kUnreadable, never a fault), the CIE's initial instructions and the FDE's
// program run up to pc. limit: the end of the loaded segment holding the
// header and the .eh_frame. Equal to the rows parse_eh_frame_hdr() and
// compact_rows() build for the whole object (tested for libc).
RowLookup row_at(const MemoryReader& memory, uint64_t hdr, uint64_t limit, uint64_t pc, Row* row);

// Every FDE of a whole .eh_frame section, walked from its start to its zero
// terminator or its end. Malformed entries end the walk (what was parsed is
// kept). Returns the number of FDEs parsed.
size_t parse_eh_frame(const Section& eh_frame, std::vector<FdeRows>* out);

// The FDEs that the search table of an .eh_frame_hdr lists; eh_frame_limit
// bounds how far an FDE or CIE may extend (the end of the mapped segment).
// Falls back to a walk of the .eh_frame when the header has no table.
size_t parse_eh_frame_hdr(const Section& hdr, uint64_t eh_frame_limit, std::vector<FdeRows>* out);

// Sorted, disjoint, merged rows for an object whose executable code starts
// at base: gaps between FDEs become Rule::kNone rows.
std::vector<Row> compact_rows(std::vector<FdeRows> fdes, uint64_t base, uint64_t end);

}  // namespace profiling::unwind::internal

#endif  // PROFIL_UNWIND_INTERNAL_CFI_H
