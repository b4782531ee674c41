// Walks a thread's stack from a register set with the compact tables of
// code_table.h.
//
// ASYNC-SIGNAL-SAFE: unwind() and registers_from_ucontext(). No allocation,
// no locks; memory is read only through a MemoryReader (memory.h), so a
// corrupt rsp or a garbage stack ends the walk instead of the process.
#ifndef PROFIL_UNWIND_UNWINDER_H
#define PROFIL_UNWIND_UNWINDER_H

#include <cstdint>

#include "unwind/code_table.h"
#include "unwind/memory.h"

namespace profiling::unwind {

inline constexpr uint32_t kDefaultMaxDepth = 128;

struct Registers {
  uint64_t pc = 0;
  uint64_t sp = 0;
  // rbp; 0 when not known (a blocked thread's registers from
  // /proc/PID/task/TID/syscall are pc and sp alone): a frame whose rule
  // needs rbp then ends the walk, marked truncated, until a frame restores
  // rbp from the stack (CFI's "rbp saved at CFA+n").
  uint64_t fp = 0;
};

struct Stack {
  uint32_t depth = 0;
  // The walk ended before the stack's outermost frame (_start, a thread's
  // start routine, a return address of 0): it failed, met the depth limit
  // or left the known code. Such a stack is kept, marked.
  bool truncated = false;
};

// The interrupted registers of a signal's ucontext_t (sigaction(2)'s third
// argument).
Registers registers_from_ucontext(const void* ucontext);

// Walks from regs, storing at most max_depth program counters leaf first
// into pcs: the interrupted PC, then return addresses (as they are on the
// stack; a symbolizer looks up pc - 1 for them), and, past a signal frame,
// the PC the signal interrupted. Signal frames (a return address at glibc's
// __restore_rt, recognised by its bytes) are crossed through the ucontext_t
// the kernel saved on the stack. Where no CFI covers a PC, the frame
// pointer is followed. table may be null (frame pointers only).
Stack unwind(const CodeTable* table, const MemoryReader& memory, Registers regs, uint64_t* pcs, uint32_t max_depth);

}  // namespace profiling::unwind

#endif  // PROFIL_UNWIND_UNWINDER_H
