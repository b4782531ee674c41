// ASYNC-SIGNAL-SAFE: everything here runs in the sampling signal handler.
#include "unwind/unwinder.h"

#include <signal.h>
#include <ucontext.h>

#include <cstddef>

namespace profiling::unwind {
namespace {

// __restore_rt (glibc sysdeps/unix/sysv/linux/x86_64/libc_sigaction.c):
// mov $15,%rax (rt_sigreturn); syscall. The kernel's sigreturn frame starts
// with the ucontext_t right where the handler's return address was popped.
constexpr uint64_t kRestoreRtLow = 0x0f0000000fc0c748ull;  // 48 c7 c0 0f 00 00 00 0f, little-endian
constexpr uint8_t kRestoreRtLast = 0x05;

bool is_signal_trampoline(const MemoryReader& memory, uint64_t pc) {
  uint64_t low = 0, high = 0;
  if (!memory.read(pc, &low) || low != kRestoreRtLow) return false;
  return memory.read(pc + 1, &high) && static_cast<uint8_t>(high >> 56) == kRestoreRtLast;
}

// A plausible return address or code pointer: user space, not in the first page.
inline bool plausible_pc(uint64_t pc) { return pc >= 4096 && pc < (uint64_t{1} << 47); }

}  // namespace

Registers registers_from_ucontext(const void* ucontext) {
  const auto* uc = static_cast<const ucontext_t*>(ucontext);
  Registers regs;
  regs.pc = static_cast<uint64_t>(uc->uc_mcontext.gregs[REG_RIP]);
  regs.sp = static_cast<uint64_t>(uc->uc_mcontext.gregs[REG_RSP]);
  regs.fp = static_cast<uint64_t>(uc->uc_mcontext.gregs[REG_RBP]);
  return regs;
}

Stack unwind(const CodeTable* table, const MemoryReader& memory, Registers regs, uint64_t* pcs, uint32_t max_depth) {
  Stack stack;
  // The first PC and the one a signal interrupted are exact; the others are
  // return addresses, looked up one byte back (a call may be a function's
  // last instruction, its return address the next function's first).
  bool exact = true;
  while (true) {
    if (stack.depth >= max_depth) {
      stack.truncated = true;
      return stack;
    }
    if (!plausible_pc(regs.pc)) {
      stack.truncated = true;
      return stack;
    }
    pcs[stack.depth++] = regs.pc;

    const uint64_t lookup = exact ? regs.pc : regs.pc - 1;
    Row found;
    const Row* row = table != nullptr && table->find(lookup, &found) ? &found : nullptr;
    if (row == nullptr && table != nullptr) table->note_unknown_pc();
    const Rule rule = row != nullptr ? row->rule : Rule::kNone;
    // A signal frame has no rule of the compact form (glibc describes
    // __restore_rt with expressions; other C libraries give it no CFI), so
    // its bytes are read only where the rule is not an ordinary one.
    const bool ordinary = rule == Rule::kCfaRsp || rule == Rule::kCfaRbp || rule == Rule::kPlt ||
                          rule == Rule::kCfaRbpDeref || rule == Rule::kOutermost;
    if (!ordinary && !exact && is_signal_trampoline(memory, regs.pc)) {
      // regs.sp is the handler's CFA: the ucontext_t the kernel pushed.
      const uint64_t mcontext = regs.sp + offsetof(ucontext_t, uc_mcontext) + offsetof(mcontext_t, gregs);
      Registers interrupted;
      if (!memory.read(mcontext + REG_RIP * 8, &interrupted.pc) || !memory.read(mcontext + REG_RSP * 8, &interrupted.sp) ||
          !memory.read(mcontext + REG_RBP * 8, &interrupted.fp)) {
        stack.truncated = true;
        return stack;
      }
      regs = interrupted;  // may be on another stack (sigaltstack): no ordering check
      exact = true;
      continue;
    }

    if (rule == Rule::kOutermost) return stack;  // _start, clone's child: complete

    // rbp unknown (0): no CFA from it, and no fault-guarded read of the
    // first page either (each such read is a SIGSEGV caught).
    const bool needs_fp =
        rule == Rule::kCfaRbp || rule == Rule::kCfaRbpDeref || rule == Rule::kNone || rule == Rule::kFramePointer;
    if (needs_fp && regs.fp == 0) {
      stack.truncated = true;
      return stack;
    }
    uint64_t cfa = 0;
    uint64_t fp = regs.fp;
    switch (rule) {
      case Rule::kCfaRsp: cfa = regs.sp + static_cast<int64_t>(row->cfa_offset); break;
      case Rule::kCfaRbp: cfa = regs.fp + static_cast<int64_t>(row->cfa_offset); break;
      case Rule::kCfaRbpDeref:
        if (!memory.read(regs.fp + static_cast<int64_t>(row->cfa_offset), &cfa)) cfa = 0;
        break;
      case Rule::kPlt:
        cfa = regs.sp + static_cast<int64_t>(row->cfa_offset) + ((regs.pc & 15) >= static_cast<uint64_t>(row->rbp_offset) ? 8 : 0);
        break;
      default:  // kNone, kFramePointer: the caller's rbp at [rbp], its return address above
        cfa = regs.fp + 16;
        if (regs.fp < regs.sp || !memory.read(regs.fp, &fp)) cfa = 0;
        break;
    }
    uint64_t return_address = 0;
    // The stack grows down: a caller's frame is above its callee's.
    if (cfa <= regs.sp || cfa == 0 || !memory.read(cfa - 8, &return_address)) {
      stack.truncated = true;
      return stack;
    }
    if (row != nullptr) {
      if (row->rbp == RbpRule::kAtCfa) {
        if (!memory.read(cfa + row->rbp_offset, &fp)) fp = 0;
      } else if (row->rbp == RbpRule::kAtRbp) {
        if (regs.fp == 0 || !memory.read(regs.fp + row->rbp_offset, &fp)) fp = 0;  // unknown stays unknown
      }
    }
    if (return_address == 0) {
      // A CFI row saying so marks the outermost frame (some C libraries'
      // thread starts); read through a frame pointer, 0 is only a guess.
      stack.truncated = row == nullptr || rule == Rule::kNone || rule == Rule::kFramePointer;
      return stack;
    }
    regs.pc = return_address;
    regs.sp = cfa;
    regs.fp = fp;
    exact = false;
  }
}

}  // namespace profiling::unwind
