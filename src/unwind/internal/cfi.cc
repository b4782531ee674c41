// parse_eh_frame, parse_eh_frame_hdr and compact_rows are NOT
// async-signal-safe (they allocate; tests and tools use them on whole
// sections). row_at and what it calls (Cursor, parse_cie, run_program,
// row_of) are ASYNC-SIGNAL-SAFE: no allocation, bounded work, and the
// object's bytes are read only through a MemoryReader.
#include "unwind/internal/cfi.h"

#include <algorithm>
#include <cstring>
#include <map>

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

// How deep DW_CFA_remember_state may nest (compilers use one level; a
// deeper program is refused rather than allocated for).
constexpr size_t kMaxRemembered = 8;

// Runs a CFA program from state, emitting a row at each advance when out is
// given (the CIE's initial instructions run with out == nullptr). With
// stop_at, it stops at the first advance past stop_at: *state is then the
// rule at stop_at (*pc says where it starts).
bool run_program(const Section& s, size_t at, size_t end, const Cie& cie, const State& initial, State* state,
                 uint64_t* pc, std::vector<AddressRow>* out, uint64_t stop_at = UINT64_MAX) {
  Cursor c(s, at, end);
  State remembered[kMaxRemembered];
  size_t depth = 0;
  bool stopped = false;
  auto emit = [&](uint64_t next_pc) {
    if (next_pc > stop_at) {
      stopped = true;
      return;
    }
    if (out != nullptr) out->push_back({*pc, row_of(*state)});
    *pc = next_pc;
  };
  while (!c.done() && !c.failed() && !stopped) {
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
      case 0x0a:  // remember_state
        if (depth == kMaxRemembered) return false;
        remembered[depth++] = *state;
        break;
      case 0x0b:  // restore_state
        if (depth == 0) return false;
        *state = remembered[--depth];
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
  return stopped || !c.failed();
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
  const char* augmentation = b.string();
  const size_t augmentation_size = std::strlen(augmentation);  // b.string() checked its end
  if (version == 4) b.skip(2);  // address_size, segment_selector_size
  for (size_t i = 0; i + 1 < augmentation_size; ++i)
    if (augmentation[i] == 'e' && augmentation[i + 1] == 'h') {
      b.fixed<uint64_t>();
      break;
    }
  cie.code_align = b.uleb();
  cie.data_align = b.sleb();
  cie.return_register = version == 1 ? b.fixed<uint8_t>() : b.uleb();
  if (augmentation_size > 0 && augmentation[0] == 'z') {
    cie.has_augmentation_data = true;
    const uint64_t data_length = b.uleb();
    const size_t data_end = b.offset() + data_length;
    for (size_t i = 1; i < augmentation_size && !b.failed(); ++i) {
      switch (augmentation[i]) {
        case 'R': cie.fde_encoding = b.fixed<uint8_t>(); break;
        case 'L': b.fixed<uint8_t>(); break;
        case 'P': b.pointer(b.fixed<uint8_t>() & ~kPeIndirect); break;
        case 'S': case 'B': case 'G': break;
        default: i = augmentation_size; break;  // unknown: skip the rest by its length
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
