// A stack of profil's own for the work its signal handlers do.
//
// Why (issue 20): the kernel puts a handler's frame on the thread's
// alternate signal stack when it has one (SA_ONSTACK), and programs
// install small ones of their own — Ruby 16 KiB from malloc, gdb 13.5 KiB,
// Rust's runtime and many C programs 8 KiB — while unwinding a sample, or
// draining a ring of stack copies, took about 18 KiB. Running on the
// program's stack overran it into the heap (Ruby: "free(): invalid
// pointer") or off its end (SIGSEGV). So each thread gets a stack of ours
// (HandlerStack::kBytes, with a guard page below it), and a handler moves to
// it before its work: on the program's stack it uses only the kernel's frame
// and the few words of the switch (kProgramStackBytes, below).
//
// The memory is also what the preload runtime registers as the thread's
// alternate stack when the program has none (a stack overflow still writes
// the profile); a handler already running on it stays where it is.
//
// ASYNC-SIGNAL-SAFE: run_on_handler_stack and handler_stack_contains. The
// others run in the thread itself, at its start and end (not in a handler).
#ifndef PROFIL_SAMPLER_HANDLER_STACK_H
#define PROFIL_SAMPLER_HANDLER_STACK_H

#include <cstddef>

namespace profiling::sampler {

struct HandlerStack {
  // 64 KiB: four times the deepest handler measured (an unwind over a
  // ring's stack copy, the dump at a checkpoint); untouched pages cost
  // nothing.
  static constexpr size_t kBytes = 64 * 1024;
  // What a handler uses of the program's stack beyond the kernel's frame:
  // the handler's entry (no locals but the saved registers) and the switch.
  static constexpr size_t kProgramStackBytes = 256;
  void* base = nullptr;  // lowest usable byte (the guard page is below it)
};

// Maps the calling thread's stack (if it has none yet) and returns it;
// base is nullptr when mmap failed (the handlers then run where the kernel
// puts them).
HandlerStack create_handler_stack();
// The calling thread's stack goes away: its handlers run where the kernel
// puts them from now on. Not while a handler of this thread runs on it.
void release_handler_stack();

// ASYNC-SIGNAL-SAFE. Calls fn(arg) on the calling thread's handler stack,
// or in place when the thread has none or is on it already (the kernel put
// the frame there: it is the registered alternate stack).
void run_on_handler_stack(void (*fn)(void*), void* arg);

}  // namespace profiling::sampler

#endif  // PROFIL_SAMPLER_HANDLER_STACK_H
