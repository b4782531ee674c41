// The CFA program interpreter both CFI readers share (internal/cfi.h):
// bounds-checked reads of a section, CIEs, and the DW_CFA_* programs run
// into the few rules of code_table.h (DWARF 5 §6.4; pointer encodings of
// the Linux Standard Base, "DWARF Extensions: DW_EH_PE").
//
// ASYNC-SIGNAL-SAFE, all of it: no allocation, bounded work, and the
// object's bytes are read only where the caller put them (row_at copies
// them through a MemoryReader first). Rows of a whole program go to a
// RowSink the caller provides, so whatever allocates stays with the caller
// (cfi_tables.cc; the handler's row_at gives none).
#ifndef PROFIL_UNWIND_INTERNAL_CFI_PROGRAM_H
#define PROFIL_UNWIND_INTERNAL_CFI_PROGRAM_H

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "unwind/code_table.h"
#include "unwind/internal/cfi.h"

namespace profiling::unwind::internal {

// DWARF register numbers on x86-64 (System V psABI, figure 3.36).
inline constexpr uint64_t kRbp = 6;
inline constexpr uint64_t kRsp = 7;
inline constexpr uint64_t kReturnAddress = 16;

// Pointer encodings (LSB, "DWARF Extensions: DW_EH_PE").
inline constexpr uint8_t kPeOmit = 0xff;
inline constexpr uint8_t kPeIndirect = 0x80;

// A bounds-checked cursor; any read past the end sets failed and returns 0.
class Cursor {
 public:
  Cursor(const Section& s, size_t at, size_t end) : s_(s), at_(at), end_(std::min(end, s.size)) {}
  bool failed() const { return failed_; }
  bool done() const { return at_ >= end_; }
  size_t offset() const { return at_; }
  uint64_t address() const { return s_.address + at_; }
  void seek(size_t at) { at_ = at; }

  template <typename T>
  T fixed() {
    T value{};
    if (end_ - std::min(at_, end_) < sizeof(T)) {
      failed_ = true;
      at_ = end_;
      return value;
    }
    std::memcpy(&value, s_.data + at_, sizeof(T));
    at_ += sizeof(T);
    return value;
  }
  uint64_t uleb() {
    uint64_t value = 0;
    for (unsigned shift = 0;; shift += 7) {
      const uint8_t byte = fixed<uint8_t>();
      if (failed_) return 0;
      if (shift < 64) value |= uint64_t{byte & 0x7fu} << shift;
      if (!(byte & 0x80)) return value;
    }
  }
  int64_t sleb() {
    uint64_t value = 0;
    unsigned shift = 0;
    uint8_t byte;
    do {
      byte = fixed<uint8_t>();
      if (failed_) return 0;
      if (shift < 64) value |= uint64_t{byte & 0x7fu} << shift;
      shift += 7;
    } while (byte & 0x80);
    if (shift < 64 && (byte & 0x40)) value |= ~uint64_t{0} << shift;
    return static_cast<int64_t>(value);
  }
  const char* string() {
    const size_t start = at_;
    while (at_ < end_ && s_.data[at_] != 0) ++at_;
    if (at_ >= end_) {
      failed_ = true;
      return "";
    }
    ++at_;
    return reinterpret_cast<const char*>(s_.data + start);
  }
  // An encoded pointer; datarel is relative to data_base (the .eh_frame_hdr).
  uint64_t pointer(uint8_t encoding, uint64_t data_base = 0);
  void skip(size_t n) {
    if (end_ - std::min(at_, end_) < n) {
      failed_ = true;
      at_ = end_;
    } else {
      at_ += n;
    }
  }

 private:
  const Section& s_;
  size_t at_;
  size_t end_;
  bool failed_ = false;
};

struct Cie {
  uint64_t code_align = 1;
  int64_t data_align = -8;
  uint64_t return_register = kReturnAddress;
  uint8_t fde_encoding = 0;
  bool has_augmentation_data = false;
  size_t instructions = 0;  // offsets in the section
  size_t instructions_end = 0;
  bool ok = false;
};

// The state the CFA program moves: just the registers the compact form
// keeps.
struct State {
  enum class Cfa : uint8_t { kRegister, kRbpDeref, kPlt, kOther } cfa = Cfa::kRegister;
  uint64_t cfa_register = kRsp;
  int64_t cfa_offset = 8;
  uint8_t plt_threshold = 0;
  enum class Reg : uint8_t { kUnchanged, kAtCfa, kAtRbp, kOther } rbp = Reg::kUnchanged, ra = Reg::kAtCfa;
  int64_t rbp_offset = 0;
  int64_t ra_offset = -8;
  bool ra_undefined = false;
};

// Where run_program puts a row each time the program advances: the rule
// that holds from address to the next row's.
class RowSink {
 public:
  virtual void add(uint64_t address, const Row& row) = 0;

 protected:
  ~RowSink() = default;
};

// The compact rule of a state (Rule::kFramePointer where it cannot say).
Row row_of(const State& s);

// Reads the CIE at offset (its length field). Returns ok == false when it is
// malformed or uses what we cannot follow.
Cie parse_cie(const Section& s, size_t offset);

// Runs a CFA program from state, emitting a row at each advance when out is
// given (the CIE's initial instructions run with out == nullptr). With
// stop_at, it stops at the first advance past stop_at: *state is then the
// rule at stop_at (*pc says where it starts).
bool run_program(const Section& s, size_t at, size_t end, const Cie& cie, const State& initial, State* state,
                 uint64_t* pc, RowSink* out, uint64_t stop_at = UINT64_MAX);

}  // namespace profiling::unwind::internal

#endif  // PROFIL_UNWIND_INTERNAL_CFI_PROGRAM_H
