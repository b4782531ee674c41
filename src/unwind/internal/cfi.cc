// ASYNC-SIGNAL-SAFE, every function here: row_at is the unwinder's lookup
// in the signal handler (code_table.cc). No allocation, no locks, no stdio;
// bounded work, and the object's bytes are read only through a
// MemoryReader (fault-safe: an unloaded object is unreadable, never a
// fault). The interpreter it runs is cfi_program.cc, as safe; the
// allocating whole-section parsers are cfi_tables.cc.
#include "unwind/internal/cfi.h"

#include <algorithm>
#include <cstring>

#include "unwind/internal/cfi_program.h"

namespace profiling::unwind::internal {
namespace {

// ASYNC-SIGNAL-SAFE. Copies [address, address + size) into out through
// memory, 8 aligned bytes at a time (an aligned read never crosses a page:
// no byte beyond the range's pages is touched).
bool copy_in(const MemoryReader& memory, uint64_t address, size_t size, uint8_t* out) {
  const uint64_t end = address + size;
  for (uint64_t word_address = address & ~uint64_t{7}; word_address < end; word_address += 8) {
    uint64_t word;
    if (!memory.read(word_address, &word)) return false;
    const uint64_t from = std::max(word_address, address), to = std::min(word_address + 8, end);
    std::memcpy(out + (from - address), reinterpret_cast<const uint8_t*>(&word) + (from - word_address), to - from);
  }
  return true;
}

// The bytes of the entry (CIE or FDE) at address, whole: copied into
// buffer when it fits, else (cc1 has 30 FDEs of 1-20 KiB, its largest
// functions, often on the stack) read in place once every page it spans has
// answered a fault-safe read: its object was loaded a moment ago, and code
// that is being unwound is not being unloaded (another process's object
// is read where its file is mapped here: MemoryReader::in_place). Bounded
// by limit; nullptr when unreadable.
const uint8_t* entry_bytes(const MemoryReader& memory, uint64_t address, uint64_t limit, uint8_t* buffer,
                           size_t capacity, size_t* size) {
  uint32_t length = 0;
  if (address + 4 > limit || !copy_in(memory, address, 4, reinterpret_cast<uint8_t*>(&length))) return nullptr;
  // 0: a terminator; 0xffffffff: a 64-bit length, which no entry needs.
  if (length == 0 || length == 0xffffffffu) return nullptr;
  *size = 4 + static_cast<size_t>(length);
  if (address + *size > limit) return nullptr;
  if (*size <= capacity) return copy_in(memory, address, *size, buffer) ? buffer : nullptr;
  uint64_t word;
  for (uint64_t page = address & ~uint64_t{4095}; page < address + *size; page += 4096)
    if (!memory.read(page < address ? address & ~uint64_t{7} : page, &word)) return nullptr;
  return memory.in_place(address, *size);
}

// The size of one search table field in an encoding (fixed sizes only: a
// table is binary-searched).
size_t field_size(uint8_t encoding) {
  switch (encoding & 0x0f) {
    case 0x02: case 0x0a: return 2;
    case 0x03: case 0x0b: return 4;
    case 0x04: case 0x0c: return 8;
    default: return 0;
  }
}

}  // namespace

RowLookup row_at(const MemoryReader& memory, uint64_t hdr, uint64_t limit, uint64_t pc, Row* row) {
  // The header: version, three encodings, the .eh_frame's address, the
  // table's length; the table follows.
  uint8_t head[32];
  if (limit <= hdr + 8) return RowLookup::kUnreadable;
  const size_t head_size = static_cast<size_t>(std::min<uint64_t>(sizeof head, limit - hdr));
  if (!copy_in(memory, hdr, head_size, head)) return RowLookup::kUnreadable;
  const Section head_section{head, head_size, hdr};
  Cursor c(head_section, 0, head_size);
  const uint8_t version = c.fixed<uint8_t>();
  const uint8_t eh_frame_encoding = c.fixed<uint8_t>();
  const uint8_t count_encoding = c.fixed<uint8_t>();
  const uint8_t table_encoding = c.fixed<uint8_t>();
  if (c.failed() || version != 1 || count_encoding == kPeOmit || table_encoding == kPeOmit)
    return RowLookup::kUnreadable;  // no table to search: an unsorted .eh_frame is the frame pointer's
  const uint64_t eh_frame = c.pointer(eh_frame_encoding, hdr);
  const uint64_t count = c.pointer(count_encoding, hdr);
  const size_t field = field_size(table_encoding);
  const uint8_t application = table_encoding & 0x70;
  if (c.failed() || field == 0 || (application != 0x00 && application != 0x30)) return RowLookup::kUnreadable;
  const uint64_t table = hdr + c.offset();
  if (count == 0) return RowLookup::kNoFde;
  if (count > (limit - table) / (2 * field)) return RowLookup::kUnreadable;
  auto field_at = [&](uint64_t address, uint64_t* value) {
    uint8_t bytes[8];
    if (!copy_in(memory, address, field, bytes)) return false;
    const Section one{bytes, field, address};
    Cursor f(one, 0, field);
    *value = f.pointer(table_encoding, hdr);
    return !f.failed();
  };
  // The last entry whose initial location is at or before pc.
  uint64_t lo = 0, hi = count;
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    uint64_t location;
    if (!field_at(table + mid * 2 * field, &location)) return RowLookup::kUnreadable;
    if (location <= pc) lo = mid + 1;
    else hi = mid;
  }
  if (lo == 0) return RowLookup::kNoFde;
  uint64_t fde = 0;
  if (!field_at(table + (lo - 1) * 2 * field + field, &fde)) return RowLookup::kUnreadable;
  if (fde < eh_frame || fde >= limit) return RowLookup::kUnreadable;

  // The FDE and its CIE (entry_bytes).
  uint8_t fde_buffer[kMaxFdeBytes];
  size_t fde_size = 0;
  const uint8_t* fde_bytes = entry_bytes(memory, fde, limit, fde_buffer, sizeof fde_buffer, &fde_size);
  if (fde_bytes == nullptr) return RowLookup::kUnreadable;
  const Section fde_section{fde_bytes, fde_size, fde};
  Cursor f(fde_section, 4, fde_size);
  const uint32_t cie_pointer = f.fixed<uint32_t>();
  if (f.failed() || cie_pointer == 0 || cie_pointer > fde + 4 - eh_frame) return RowLookup::kUnreadable;
  const uint64_t cie_address = fde + 4 - cie_pointer;
  uint8_t cie_buffer[kMaxCieBytes];
  size_t cie_size = 0;
  const uint8_t* cie_bytes = entry_bytes(memory, cie_address, limit, cie_buffer, sizeof cie_buffer, &cie_size);
  if (cie_bytes == nullptr) return RowLookup::kUnreadable;
  const Section cie_section{cie_bytes, cie_size, cie_address};
  const Cie cie = parse_cie(cie_section, 0);
  if (!cie.ok) return RowLookup::kUnreadable;
  const uint64_t start = f.pointer(cie.fde_encoding);
  const uint64_t range = f.pointer(cie.fde_encoding & 0x0f);
  if (cie.has_augmentation_data) f.skip(f.uleb());
  if (f.failed() || start == 0 || range == 0) return RowLookup::kUnreadable;
  if (pc < start || pc - start >= range) return RowLookup::kNoFde;  // between FDEs

  State initial;
  uint64_t at = start;
  if (!run_program(cie_section, cie.instructions, cie.instructions_end, cie, initial, &initial, &at, nullptr))
    return RowLookup::kUnreadable;
  State state = initial;
  at = start;
  // As the whole-section parse does: a program that cannot be followed up
  // to pc leaves pc to the frame pointer.
  if (!run_program(fde_section, f.offset(), fde_size, cie, initial, &state, &at, nullptr, pc)) {
    State unknown;
    unknown.cfa = State::Cfa::kOther;
    state = unknown;
  }
  *row = row_of(state);
  row->start = 0;
  return RowLookup::kFound;
}

}  // namespace profiling::unwind::internal
