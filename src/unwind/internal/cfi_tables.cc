// NOT async-signal-safe: host side, never reached from the signal handler.
// The whole-section parsers of cfi.h (parse_eh_frame, parse_eh_frame_hdr,
// compact_rows) allocate (maps, vectors) and read the section in place;
// the tests, and the outside sampler for an object without an
// .eh_frame_hdr (outside/process_table.cc), use them on whole objects.
// They run the same interpreter as the handler's row_at (cfi_program.h),
// so both read a program the same way.
#include "unwind/internal/cfi.h"

#include <algorithm>
#include <map>

#include "unwind/internal/cfi_program.h"

namespace profiling::unwind::internal {
namespace {

// The rows of one FDE's program, appended to its FdeRows.
class AppendRows final : public RowSink {
 public:
  explicit AppendRows(std::vector<AddressRow>* rows) : rows_(rows) {}
  void add(uint64_t address, const Row& row) override { rows_->push_back({address, row}); }

 private:
  std::vector<AddressRow>* rows_;
};

// Parses the FDE at offset into out. Returns the offset after it, or 0 when
// the walk must stop (a zero terminator or a malformed entry).
size_t parse_entry(const Section& s, size_t offset, std::map<size_t, Cie>* cies, std::vector<FdeRows>* out) {
  Cursor c(s, offset, s.size);
  uint64_t length = c.fixed<uint32_t>();
  if (c.failed() || length == 0) return 0;
  if (length == 0xffffffffu) length = c.fixed<uint64_t>();
  const size_t body = c.offset();
  if (c.failed() || length > s.size - body) return 0;
  const size_t next = body + length;
  const uint32_t cie_pointer = c.fixed<uint32_t>();
  if (cie_pointer == 0) return next;  // a CIE: read when an FDE points to it
  if (cie_pointer > body) return next;
  const size_t cie_offset = body - cie_pointer;
  auto it = cies->find(cie_offset);
  if (it == cies->end()) it = cies->emplace(cie_offset, parse_cie(s, cie_offset)).first;
  const Cie& cie = it->second;
  if (!cie.ok) return next;
  Cursor f(s, c.offset(), next);
  const uint64_t start = f.pointer(cie.fde_encoding);
  const uint64_t range = f.pointer(cie.fde_encoding & 0x0f);
  if (cie.has_augmentation_data) f.skip(f.uleb());
  if (f.failed() || start == 0 || range == 0) return next;
  State initial;
  uint64_t pc = start;
  if (!run_program(s, cie.instructions, cie.instructions_end, cie, initial, &initial, &pc, nullptr)) return next;
  FdeRows fde{start, start + range, {}};
  State state = initial;
  pc = start;
  AppendRows rows(&fde.rows);
  // A program we cannot finish keeps the rows up to there and walks the
  // frame pointer for the rest of the function.
  if (!run_program(s, f.offset(), next, cie, initial, &state, &pc, &rows)) {
    State unknown;
    unknown.cfa = State::Cfa::kOther;
    state = unknown;
  }
  if (pc < fde.end) fde.rows.push_back({pc, row_of(state)});
  out->push_back(std::move(fde));
  return next;
}

}  // namespace

size_t parse_eh_frame(const Section& eh_frame, std::vector<FdeRows>* out) {
  std::map<size_t, Cie> cies;
  const size_t before = out->size();
  for (size_t offset = 0; offset < eh_frame.size;) {
    const size_t next = parse_entry(eh_frame, offset, &cies, out);
    if (next == 0 || next <= offset) break;
    offset = next;
  }
  return out->size() - before;
}

size_t parse_eh_frame_hdr(const Section& hdr, uint64_t eh_frame_limit, std::vector<FdeRows>* out) {
  Cursor c(hdr, 0, hdr.size);
  const uint8_t version = c.fixed<uint8_t>();
  const uint8_t eh_frame_encoding = c.fixed<uint8_t>();
  const uint8_t count_encoding = c.fixed<uint8_t>();
  const uint8_t table_encoding = c.fixed<uint8_t>();
  if (c.failed() || version != 1) return 0;
  const uint64_t eh_frame = c.pointer(eh_frame_encoding, hdr.address);
  if (c.failed() || eh_frame == 0 || eh_frame >= eh_frame_limit) return 0;
  // In the live process the section's bytes are at its address.
  Section section{reinterpret_cast<const uint8_t*>(hdr.data + (eh_frame - hdr.address)),
                  static_cast<size_t>(eh_frame_limit - eh_frame), eh_frame};
  if (count_encoding == kPeOmit || table_encoding == kPeOmit) return parse_eh_frame(section, out);
  const uint64_t count = c.pointer(count_encoding, hdr.address);
  std::map<size_t, Cie> cies;
  const size_t before = out->size();
  for (uint64_t i = 0; i < count && !c.failed(); ++i) {
    c.pointer(table_encoding, hdr.address);  // initial location
    const uint64_t fde = c.pointer(table_encoding, hdr.address);
    if (c.failed() || fde < eh_frame || fde >= eh_frame_limit) continue;
    parse_entry(section, static_cast<size_t>(fde - eh_frame), &cies, out);
  }
  return out->size() - before;
}

std::vector<Row> compact_rows(std::vector<FdeRows> fdes, uint64_t base, uint64_t end) {
  std::sort(fdes.begin(), fdes.end(), [](const FdeRows& a, const FdeRows& b) { return a.start < b.start; });
  std::vector<Row> rows;
  auto add = [&](uint64_t address, Row row) {
    if (address < base || address >= end) return;
    row.start = static_cast<uint32_t>(address - base);
    if (!rows.empty() && rows.back().start == row.start) {
      rows.back() = row;  // an empty range: the later rule wins
    } else if (rows.empty() || rows.back().rule != row.rule || rows.back().cfa_offset != row.cfa_offset ||
               rows.back().rbp != row.rbp || rows.back().rbp_offset != row.rbp_offset) {
      rows.push_back(row);
    }
  };
  const Row none{0, 0, 0, Rule::kNone, RbpRule::kUnchanged};
  add(base, none);
  uint64_t covered = base;
  for (const FdeRows& fde : fdes) {
    if (fde.end <= covered || fde.start >= end) continue;  // overlapping or outside: the first FDE wins
    if (fde.start > covered) add(covered, none);
    for (const AddressRow& r : fde.rows)
      if (r.address >= fde.start && r.address < fde.end) add(std::max(r.address, covered), r.row);
    covered = fde.end;
  }
  if (covered < end) add(covered, none);
  return rows;
}

}  // namespace profiling::unwind::internal
