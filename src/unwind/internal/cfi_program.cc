// ASYNC-SIGNAL-SAFE, every function here (cfi_program.h): reached from
// the signal handler through row_at (cfi.cc). No allocation, no locks, no
// stdio; rows leave only through the caller's RowSink.
#include "unwind/internal/cfi_program.h"

namespace profiling::unwind::internal {

uint64_t Cursor::pointer(uint8_t encoding, uint64_t data_base) {
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

namespace {

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

}  // namespace

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

bool run_program(const Section& s, size_t at, size_t end, const Cie& cie, const State& initial, State* state,
                 uint64_t* pc, RowSink* out, uint64_t stop_at) {
  Cursor c(s, at, end);
  State remembered[kMaxRemembered];
  size_t depth = 0;
  bool stopped = false;
  auto emit = [&](uint64_t next_pc) {
    if (next_pc > stop_at) {
      stopped = true;
      return;
    }
    if (out != nullptr) out->add(*pc, row_of(*state));
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


}  // namespace profiling::unwind::internal
