// NOT async-signal-safe: runs when a code table is built (code_table.cc).
#include "unwind/internal/cfi.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <string>

namespace profiling::unwind::internal {
namespace {

// DWARF register numbers on x86-64 (System V psABI, figure 3.36).
constexpr uint64_t kRbp = 6;
constexpr uint64_t kRsp = 7;
constexpr uint64_t kReturnAddress = 16;

// Pointer encodings (LSB, "DWARF Extensions: DW_EH_PE").
constexpr uint8_t kPeOmit = 0xff;
constexpr uint8_t kPeIndirect = 0x80;

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
  uint64_t pointer(uint8_t encoding, uint64_t data_base = 0) {
    if (encoding == kPeOmit) return 0;
    const uint64_t here = address();
    uint64_t value;
    switch (encoding & 0x0f) {
      case 0x00: value = fixed<uint64_t>(); break;
      case 0x01: value = uleb(); break;
      case 0x02: value = fixed<uint16_t>(); break;
      case 0x03: value = fixed<uint32_t>(); break;
      case 0x04: value = fixed<uint64_t>(); break;
      case 0x09: value = static_cast<uint64_t>(sleb()); break;
      case 0x0a: value = static_cast<uint64_t>(int64_t{fixed<int16_t>()}); break;
      case 0x0b: value = static_cast<uint64_t>(int64_t{fixed<int32_t>()}); break;
      case 0x0c: value = fixed<uint64_t>(); break;
      default: failed_ = true; return 0;
    }
    switch (encoding & 0x70) {
      case 0x00: break;
      case 0x10: value += here; break;       // pcrel
      case 0x30: value += data_base; break;  // datarel
      default: failed_ = true; return 0;     // textrel, funcrel: not used on x86-64 Linux
    }
    // indirect: the address of the pointer; personality routines only,
    // which we never need.
    (void)kPeIndirect;
    return value;
  }
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

Row row_of(const State& s) {
  Row row{};
  row.rule = Rule::kFramePointer;
  if (s.ra_undefined) {
    row.rule = Rule::kOutermost;
    return row;
  }
  if (s.ra != State::Reg::kAtCfa || s.ra_offset != -8) return row;
  switch (s.cfa) {
    case State::Cfa::kRegister:
      if (s.cfa_register == kRsp) row.rule = Rule::kCfaRsp;
      else if (s.cfa_register == kRbp) row.rule = Rule::kCfaRbp;
      else return row;  // a DRAP register other than rbp (r10 in realigned prologues): rare and short
      break;
    case State::Cfa::kRbpDeref: row.rule = Rule::kCfaRbpDeref; break;
    case State::Cfa::kPlt:
      row.rule = Rule::kPlt;
      row.rbp_offset = s.plt_threshold;
      break;
    case State::Cfa::kOther: return row;
  }
  if (s.cfa_offset < INT32_MIN || s.cfa_offset > INT32_MAX) {
    row.rule = Rule::kFramePointer;
    return row;
  }
  row.cfa_offset = static_cast<int32_t>(s.cfa_offset);
  if (row.rule == Rule::kPlt) return row;
  if (s.rbp == State::Reg::kAtCfa || s.rbp == State::Reg::kAtRbp) {
    if (s.rbp_offset < INT16_MIN || s.rbp_offset > INT16_MAX) return Row{0, 0, 0, Rule::kFramePointer, RbpRule::kUnchanged};
    row.rbp = s.rbp == State::Reg::kAtCfa ? RbpRule::kAtCfa : RbpRule::kAtRbp;
    row.rbp_offset = static_cast<int16_t>(s.rbp_offset);
  }
  return row;
}

// DW_CFA_def_cfa_expression: the two forms x86-64 toolchains emit.
// PLT stubs (binutils' elf_x86_64 eh_frame_plt): DW_OP_breg7 N; DW_OP_breg16 0;
// DW_OP_lit15; DW_OP_and; DW_OP_litK; DW_OP_ge; DW_OP_lit3; DW_OP_shl;
// DW_OP_plus — CFA = rsp + N + 8 when (rip & 15) >= K. A realigned stack
// (GCC's DRAP): DW_OP_breg6 N; DW_OP_deref — CFA = *(rbp + N).
void cfa_expression(const Section& s, size_t at, size_t length, State* state) {
  state->cfa = State::Cfa::kOther;
  Cursor c(s, at, at + length);
  const uint8_t op = c.fixed<uint8_t>();
  if (op == 0x77) {  // DW_OP_breg7
    const int64_t n = c.sleb();
    const uint8_t tail[] = {0x80, 0x00, 0x3f, 0x1a};
    for (uint8_t expected : tail)
      if (c.fixed<uint8_t>() != expected) return;
    const uint8_t lit = c.fixed<uint8_t>();
    const uint8_t rest[] = {0x2a, 0x33, 0x24, 0x22};
    for (uint8_t expected : rest)
      if (c.fixed<uint8_t>() != expected) return;
    if (c.failed() || !c.done() || lit < 0x30 || lit > 0x3f) return;
    state->cfa = State::Cfa::kPlt;
    state->cfa_offset = n;
    state->plt_threshold = static_cast<uint8_t>(lit - 0x30);
  } else if (op == 0x76) {  // DW_OP_breg6
    const int64_t n = c.sleb();
    if (c.fixed<uint8_t>() != 0x06 || c.failed() || !c.done()) return;  // DW_OP_deref
    state->cfa = State::Cfa::kRbpDeref;
    state->cfa_offset = n;
  }
}

// DW_CFA_expression for rbp: a realigned frame saves it at DW_OP_breg6 N.
void rbp_expression(const Section& s, size_t at, size_t length, State* state) {
  state->rbp = State::Reg::kOther;
  Cursor c(s, at, at + length);
  if (c.fixed<uint8_t>() != 0x76) return;
  const int64_t n = c.sleb();
  if (c.failed() || !c.done()) return;
  state->rbp = State::Reg::kAtRbp;
  state->rbp_offset = n;
}

void set_register_offset(const Cie& cie, uint64_t reg, int64_t factored, State* state) {
  const int64_t offset = factored * cie.data_align;
  if (reg == kRbp) {
    state->rbp = State::Reg::kAtCfa;
    state->rbp_offset = offset;
  } else if (reg == cie.return_register) {
    state->ra = State::Reg::kAtCfa;
    state->ra_offset = offset;
    state->ra_undefined = false;
  }
}

void restore_register(uint64_t reg, const Cie& cie, const State& initial, State* state) {
  if (reg == kRbp) {
    state->rbp = initial.rbp;
    state->rbp_offset = initial.rbp_offset;
  } else if (reg == cie.return_register) {
    state->ra = initial.ra;
    state->ra_offset = initial.ra_offset;
    state->ra_undefined = initial.ra_undefined;
  }
}

void other_register_rule(uint64_t reg, const Cie& cie, State* state, bool undefined) {
  if (reg == kRbp) {
    state->rbp = undefined ? State::Reg::kUnchanged : State::Reg::kOther;
  } else if (reg == cie.return_register) {
    if (undefined) state->ra_undefined = true;
    else state->ra = State::Reg::kOther;
  }
}

// Runs a CFA program from state, emitting a row at each advance when out is
// given (the CIE's initial instructions run with out == nullptr).
bool run_program(const Section& s, size_t at, size_t end, const Cie& cie, const State& initial, State* state,
                 uint64_t* pc, std::vector<AddressRow>* out) {
  Cursor c(s, at, end);
  std::vector<State> remembered;
  auto emit = [&](uint64_t next_pc) {
    if (out != nullptr) out->push_back({*pc, row_of(*state)});
    *pc = next_pc;
  };
  while (!c.done() && !c.failed()) {
    const uint8_t op = c.fixed<uint8_t>();
    const uint8_t high = op & 0xc0, low = op & 0x3f;
    if (high == 0x40) {  // DW_CFA_advance_loc
      emit(*pc + low * cie.code_align);
      continue;
    }
    if (high == 0x80) {  // DW_CFA_offset
      set_register_offset(cie, low, static_cast<int64_t>(c.uleb()), state);
      continue;
    }
    if (high == 0xc0) {  // DW_CFA_restore
      restore_register(low, cie, initial, state);
      continue;
    }
    switch (op) {
      case 0x00: break;  // DW_CFA_nop
      case 0x01: emit(c.pointer(cie.fde_encoding)); break;  // DW_CFA_set_loc
      case 0x02: emit(*pc + c.fixed<uint8_t>() * cie.code_align); break;
      case 0x03: emit(*pc + c.fixed<uint16_t>() * cie.code_align); break;
      case 0x04: emit(*pc + c.fixed<uint32_t>() * cie.code_align); break;
      case 0x05: {  // DW_CFA_offset_extended
        const uint64_t reg = c.uleb();
        set_register_offset(cie, reg, static_cast<int64_t>(c.uleb()), state);
        break;
      }
      case 0x06: restore_register(c.uleb(), cie, initial, state); break;  // restore_extended
      case 0x07: other_register_rule(c.uleb(), cie, state, true); break;  // undefined
      case 0x08: {  // DW_CFA_same_value
        const uint64_t reg = c.uleb();
        if (reg == kRbp) state->rbp = State::Reg::kUnchanged;
        else if (reg == cie.return_register) state->ra = State::Reg::kOther;
        break;
      }
      case 0x09: {  // DW_CFA_register
        const uint64_t reg = c.uleb();
        c.uleb();
        other_register_rule(reg, cie, state, false);
        break;
      }
      case 0x0a: remembered.push_back(*state); break;  // remember_state
      case 0x0b:                                        // restore_state
        if (remembered.empty()) return false;
        *state = remembered.back();
        remembered.pop_back();
        break;
      case 0x0c:  // DW_CFA_def_cfa
        state->cfa = State::Cfa::kRegister;
        state->cfa_register = c.uleb();
        state->cfa_offset = static_cast<int64_t>(c.uleb());
        break;
      case 0x0d:  // DW_CFA_def_cfa_register
        if (state->cfa != State::Cfa::kRegister) state->cfa = State::Cfa::kOther;
        state->cfa_register = c.uleb();
        break;
      case 0x0e: state->cfa_offset = static_cast<int64_t>(c.uleb()); break;  // def_cfa_offset
      case 0x0f: {  // DW_CFA_def_cfa_expression
        const uint64_t length = c.uleb();
        cfa_expression(s, c.offset(), length, state);
        c.skip(length);
        break;
      }
      case 0x10: {  // DW_CFA_expression
        const uint64_t reg = c.uleb();
        const uint64_t length = c.uleb();
        if (reg == kRbp) rbp_expression(s, c.offset(), length, state);
        else other_register_rule(reg, cie, state, false);
        c.skip(length);
        break;
      }
      case 0x11: {  // DW_CFA_offset_extended_sf
        const uint64_t reg = c.uleb();
        set_register_offset(cie, reg, c.sleb(), state);
        break;
      }
      case 0x12:  // DW_CFA_def_cfa_sf
        state->cfa = State::Cfa::kRegister;
        state->cfa_register = c.uleb();
        state->cfa_offset = c.sleb() * cie.data_align;
        break;
      case 0x13: state->cfa_offset = c.sleb() * cie.data_align; break;  // def_cfa_offset_sf
      case 0x14:                                                        // DW_CFA_val_offset
      case 0x15: {                                                      // DW_CFA_val_offset_sf
        const uint64_t reg = c.uleb();
        if (op == 0x14) c.uleb();
        else c.sleb();
        other_register_rule(reg, cie, state, false);
        break;
      }
      case 0x16: {  // DW_CFA_val_expression
        const uint64_t reg = c.uleb();
        c.skip(c.uleb());
        other_register_rule(reg, cie, state, false);
        break;
      }
      case 0x2e: c.uleb(); break;  // DW_CFA_GNU_args_size
      case 0x2f: {                 // DW_CFA_GNU_negative_offset_extended
        const uint64_t reg = c.uleb();
        set_register_offset(cie, reg, -static_cast<int64_t>(c.uleb()), state);
        break;
      }
      default: return false;  // an opcode we do not know: the rest cannot be trusted
    }
  }
  return !c.failed();
}

// Reads the CIE at offset (its length field). Returns ok == false when it is
// malformed or uses what we cannot follow.
Cie parse_cie(const Section& s, size_t offset) {
  Cie cie;
  Cursor c(s, offset, s.size);
  uint64_t length = c.fixed<uint32_t>();
  if (length == 0xffffffffu) length = c.fixed<uint64_t>();
  const size_t body = c.offset();
  if (c.failed() || length > s.size - body) return cie;
  const size_t end = body + length;
  Cursor b(s, body, end);
  if (b.fixed<uint32_t>() != 0) return cie;  // not a CIE
  const uint8_t version = b.fixed<uint8_t>();
  if (version != 1 && version != 3 && version != 4) return cie;
  const std::string augmentation = b.string();
  if (version == 4) b.skip(2);  // address_size, segment_selector_size
  if (augmentation.find("eh") != std::string::npos) b.fixed<uint64_t>();
  cie.code_align = b.uleb();
  cie.data_align = b.sleb();
  cie.return_register = version == 1 ? b.fixed<uint8_t>() : b.uleb();
  if (!augmentation.empty() && augmentation[0] == 'z') {
    cie.has_augmentation_data = true;
    const uint64_t data_length = b.uleb();
    const size_t data_end = b.offset() + data_length;
    for (size_t i = 1; i < augmentation.size() && !b.failed(); ++i) {
      switch (augmentation[i]) {
        case 'R': cie.fde_encoding = b.fixed<uint8_t>(); break;
        case 'L': b.fixed<uint8_t>(); break;
        case 'P': b.pointer(b.fixed<uint8_t>() & ~kPeIndirect); break;
        case 'S': case 'B': case 'G': break;
        default: i = augmentation.size(); break;  // unknown: skip the rest by its length
      }
    }
    b.seek(data_end);
  }
  if (b.failed() || b.offset() > end) return cie;
  cie.instructions = b.offset();
  cie.instructions_end = end;
  cie.ok = true;
  return cie;
}

// Parses the FDE at offset into out. Returns the offset after it, or 0 when
// the walk must stop (a zero terminator or a malformed entry); *parsed says
// whether an FDE was added.
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
  // A program we cannot finish keeps the rows up to there and walks the
  // frame pointer for the rest of the function.
  if (!run_program(s, f.offset(), next, cie, initial, &state, &pc, &fde.rows)) {
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
