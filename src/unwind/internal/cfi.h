// .eh_frame parsing: CIEs, FDEs and their CFA programs, reduced to the
// compact rows of code_table.h (DWARF 5 §6.4; the .eh_frame and
// .eh_frame_hdr encodings of the Linux Standard Base, "Exception Frames").
// NOT async-signal-safe: runs when a table is built.
#ifndef PROFIL_UNWIND_INTERNAL_CFI_H
#define PROFIL_UNWIND_INTERNAL_CFI_H

#include <cstddef>
#include <cstdint>
#include <vector>

#include "unwind/code_table.h"

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
