// A stack of profil's own for its handlers' work (handler_stack.h).
//
// ASYNC-SIGNAL-SAFE: run_on_handler_stack (a thread-local load, a compare,
// the switch in handler_stack.S, sigaltstack(2)). create/release_handler_stack run in the
// thread itself outside any handler (mmap, munmap).
#include "sampler/handler_stack.h"

#include <signal.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstdint>

extern "C" void profil_call_on_stack(void* arg, void (*fn)(void*), void* stack_top);

namespace profiling::sampler {
namespace {

constexpr size_t kGuard = 4096;
__thread char* t_stack_base __attribute__((tls_model("initial-exec")));

}  // namespace

HandlerStack create_handler_stack() {
  if (t_stack_base == nullptr) {
    void* memory = ::mmap(nullptr, HandlerStack::kBytes + kGuard, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (memory == MAP_FAILED) return HandlerStack{};
    // Overrunning it faults at once rather than writing into whatever the
    // kernel mapped below.
    ::mprotect(memory, kGuard, PROT_NONE);
    t_stack_base = static_cast<char*>(memory) + kGuard;
  }
  return HandlerStack{t_stack_base};
}

void release_handler_stack() {
  char* base = t_stack_base;
  if (base == nullptr) return;
  t_stack_base = nullptr;
  ::munmap(base - kGuard, HandlerStack::kBytes + kGuard);
}

namespace {

// A handler's work on our stack while the program's own alternate stack is
// registered (CPython <= 3.7's faulthandler sets one of 13.5 KiB at start).
// The kernel puts a signal that arrives meanwhile (SA_ONSTACK: a fault in a
// fault-safe load, another sample) at the top of the registered stack
// whenever the thread's stack pointer is not on it: over the interrupted
// handler's signal frame (when the kernel put it there) and, once that
// handler moved here too, over its frames at the top of ours. python3.6
// under --inside --clock perf-signal died of it in 3 runs of 30 (a return
// into the handler stack). So while the work runs here, ours is the
// registered stack, and a nested signal lands below the work's frames.
struct OnOurStack {
  void (*fn)(void*);
  void* arg;
  stack_t program{};  // the alternate stack ours replaced
  bool swapped = false;
};

void run_with_ours_registered(void* opaque) {
  auto* call = static_cast<OnOurStack*>(opaque);
  const int saved_errno = errno;
  stack_t ours{};
  ours.ss_sp = t_stack_base;
  ours.ss_size = HandlerStack::kBytes;
  // Allowed: the stack pointer is on neither stack the kernel knows of.
  if (::sigaltstack(nullptr, &call->program) == 0 && !(call->program.ss_flags & SS_DISABLE) &&
      call->program.ss_sp != t_stack_base)
    call->swapped = ::sigaltstack(&ours, nullptr) == 0;
  errno = saved_errno;
  call->fn(call->arg);
}

}  // namespace

void run_on_handler_stack(void (*fn)(void*), void* arg) {
  char* const base = t_stack_base;
  const auto here = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  const auto low = reinterpret_cast<uintptr_t>(base);
  if (base == nullptr || (here >= low && here < low + HandlerStack::kBytes)) {
    fn(arg);
    return;
  }
  OnOurStack call{fn, arg};
  profil_call_on_stack(&call, run_with_ours_registered, base + HandlerStack::kBytes);
  if (call.swapped) {
    // Back off ours: the program's stack is registered again as it was.
    const int saved_errno = errno;
    stack_t program = call.program;
    program.ss_flags &= ~SS_ONSTACK;
    (void)::sigaltstack(&program, nullptr);
    errno = saved_errno;
  }
}

}  // namespace profiling::sampler
