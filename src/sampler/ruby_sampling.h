// Ruby 3.1 frames read at the sample, inside the program (issue 34,
// `profil run --inside`): the signal handler, on the sampled thread, after
// its native unwind, reads the thread's own execution context and walks
// its control frames (interp/ruby_walk.h) with fault-safe loads, and stores
// them after the native stack as python_sampling.h stores CPython's (the
// same marker and words: iseq, pc with the finish flag). Naming them and
// merging them is the dump's work (runtime/ruby_inside.h).
//
// The thread's context without a lock or a list: Ruby keeps it in a TLS
// variable of libruby's, ruby_current_ec (set at each thread's start and
// Fiber switch: rb_ractor_set_current_ec). libruby is loaded with the
// program (DT_NEEDED), so its TLS block is in the static TLS area, at the
// same offset from every thread's thread pointer (%fs base); the offset is
// found once at start (ruby_inside.cc) and the handler reads one word
// there. A thread Ruby did not make reads 0: no frames.
//
// ASYNC-SIGNAL-SAFE: deliver_stack_with_ruby. set_ruby_sampling is host
// side (the preload's start, before sampling starts); what it publishes is
// never freed.
#ifndef PROFIL_SAMPLER_RUBY_SAMPLING_H
#define PROFIL_SAMPLER_RUBY_SAMPLING_H

#include <atomic>
#include <cstdint>

#include "interp/python_merge.h"
#include "interp/ruby_layout.h"
#include "unwind/stack_table.h"

namespace profiling::sampler {

struct RubySampling {
  interp::RubyLayout layout;
  int64_t ec_offset = 0;  // &ruby_current_ec less the thread pointer
  interp::EvalLoop loop;  // rb_vm_exec
};

// Publishes ruby (nullptr: none): every later sample with stacks reads the
// sampled thread's Ruby frames. Host side, once.
void set_ruby_sampling(const RubySampling* ruby);
extern std::atomic<const RubySampling*> g_ruby;

// The sampled stack of the interrupted context, its Ruby frames after it
// (python_sampling.h's format), added to table.
void deliver_stack_with_ruby(const RubySampling& ruby, unwind::StackTable* table, const void* context,
                             uint32_t weight);

}  // namespace profiling::sampler

#endif  // PROFIL_SAMPLER_RUBY_SAMPLING_H
