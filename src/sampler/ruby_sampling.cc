// ASYNC-SIGNAL-SAFE (ruby_sampling.h): everything here but set_ruby_sampling
// runs in the sampling signal handler. No allocation, no lock, no stdio.
//
// The program's memory is read with process_vm_readv on itself
// (interp::ProcessMemory), not with the fault-safe loads CPython's frames
// are read with: Ruby gives each thread an alternate signal stack of its
// own, so the sampling signal's frame is on it while the handler runs on
// profil's stack, and a fault taken there (SA_ONSTACK, not on the
// alternate stack) gets its frame at that stack's top, over the sampling
// signal's: its return then restored clobbered registers (rb_vm_exec with
// %rbp 0xa0). A read that fails here is an error return, not a fault.
#include "sampler/ruby_sampling.h"

#include <unistd.h>

#include "interp/readers.h"
#include "interp/ruby_walk.h"
#include "sampler/python_sampling.h"

namespace profiling::sampler {

std::atomic<const RubySampling*> g_ruby{nullptr};

void set_ruby_sampling(const RubySampling* ruby) { g_ruby.store(ruby, std::memory_order_release); }

namespace {

uint64_t thread_pointer() {
  uint64_t pointer;
  asm volatile("mov %%fs:0, %0" : "=r"(pointer));  // the TCB's self pointer (x86-64)
  return pointer;
}

// Appends the thread's Ruby frames to pcs[0..depth); a stack without an
// rb_vm_exec frame (a thread outside the VM) gets none.
uint32_t append_ruby_frames(const void* runtime, uint64_t* pcs, uint32_t depth) {
  const RubySampling& ruby = *static_cast<const RubySampling*>(runtime);
  bool in_loop = false;
  for (uint32_t k = 0; k < depth && !in_loop; ++k) in_loop = ruby.loop.contains(pcs[k]);
  if (!in_loop) return depth;
  // The thread's own TLS: mapped while the thread lives.
  const uint64_t ec = *reinterpret_cast<const uint64_t*>(thread_pointer() + static_cast<uint64_t>(ruby.ec_offset));
  if (ec == 0) return depth;
  interp::ProcessMemory memory(::getpid());
  interp::RawFrame raw[kMaxInsidePythonFrames];
  const interp::WalkResult walk = interp::walk_ruby_frames(ruby.layout, memory, ec, raw, kMaxInsidePythonFrames);
  return append_marked_frames(raw, walk, pcs, depth);
}

}  // namespace

void deliver_stack_with_ruby(const RubySampling& ruby, unwind::StackTable* table, const void* context,
                             uint32_t weight) {
  deliver_stack_with_frames(append_ruby_frames, &ruby, table, context, weight);
}

}  // namespace profiling::sampler
