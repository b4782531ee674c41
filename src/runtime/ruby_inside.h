// Ruby 3.1 frames from inside the program (issue 34, `profil run
// --inside`): where the preload runtime finds Ruby, and how its dump names
// and merges the raw Ruby frames the sampling handler stored with each
// stack (sampler/ruby_sampling.h), as python_inside.h does for CPython.
//
// Start-up (start_ruby_frames, NOT async-signal-safe: dlsym, dladdr1,
// mmap; the preload constructor, before sampling starts, when the program
// and libruby are mapped and no Ruby code has run): Ruby is found by its
// dynamic symbols in the process — ruby_version ("3.1.2": the layout,
// interp/ruby_layout.h), rb_vm_exec with its size, and ruby_current_ec, a
// TLS variable whose address dlsym gives for the calling thread: less the
// thread pointer, the offset every thread's is at (libruby's TLS is
// static). Never by reading files. On the `auto` clock a Ruby process
// samples on perf-signal (the handler must run on the sampled thread), as a
// CPython one does. PROFIL_INTERPRETER=0 turns it off.
//
// The dump (RubyMerge, ruby_frame_names: ASYNC-SIGNAL-SAFE, as the whole
// dump is; one dump at a time): each stored stack's Ruby frames are named
// and merged into its native stack by interp/python_merge.h's rule (with
// rb_vm_exec as the loop), into native addresses and format::kRubyFrameBase
// + n: n = 0 the misfit mark, 1 an rb_vm_exec leaving its frame, 2 an iseq
// the dump could not read, then one per (iseq, line). Names are read with
// fault-safe loads (interp/ruby_code_head.h), once per iseq address, into
// tables mapped at start. The naming rule is python_inside.h's: an iseq
// freed and its address reused before the first dump after its sample gives
// the sample the other's name (a dump comes within 50 ms of CPU time).
#ifndef PROFIL_RUNTIME_RUBY_INSIDE_H
#define PROFIL_RUNTIME_RUBY_INSIDE_H

#include <cstdint>

#include "runtime/profraw_sources.h"

namespace profiling::runtime {

// Finds Ruby 3.1 in this process and, found, publishes the handler's
// RubySampling (sampler/ruby_sampling.h). true when it did.
bool start_ruby_frames();
bool ruby_frames_on();

// Forwards each stack to inner with its Ruby frames named and merged.
class RubyMerge final : public StackVisitor {
 public:
  explicit RubyMerge(StackVisitor& inner) : inner_(inner) {}
  void visit(const uint64_t* pcs, uint32_t depth, bool truncated, uint64_t weight, int32_t tid,
             uint32_t observations, uint8_t gil) override;

 private:
  StackVisitor& inner_;
};

// The names of every Ruby frame address RubyMerge has given out.
const InterpreterFrameSource& ruby_frame_names();

}  // namespace profiling::runtime

#endif  // PROFIL_RUNTIME_RUBY_INSIDE_H
