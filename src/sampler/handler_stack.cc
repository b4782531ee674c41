// A stack of profil's own for its handlers' work (handler_stack.h).
//
// ASYNC-SIGNAL-SAFE: run_on_handler_stack (a thread-local load, a compare,
// the switch in handler_stack.S). create/release_handler_stack run in the
// thread itself outside any handler (mmap, munmap).
#include "sampler/handler_stack.h"

#include <sys/mman.h>

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

void run_on_handler_stack(void (*fn)(void*), void* arg) {
  char* const base = t_stack_base;
  const auto here = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  const auto low = reinterpret_cast<uintptr_t>(base);
  if (base == nullptr || (here >= low && here < low + HandlerStack::kBytes)) {
    fn(arg);
    return;
  }
  profil_call_on_stack(arg, fn, base + HandlerStack::kBytes);
}

}  // namespace profiling::sampler
