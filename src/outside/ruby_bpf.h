// Ruby frames read at the moment of the sample, in the kernel (issue 34):
// the host side of bpf/ruby_stacks.bpf.h, the Ruby half of the BPF program
// python_bpf.h loads and attaches (a perf event carries one program, so
// CPython's and Ruby's walks are one program, one ring, one thread map).
// A Ruby process is put in the program's map of Ruby processes with its
// layout's walk fields; its threads are put in as Python's are
// (PythonStackReads::add_thread, with the thread's rb_thread_t), and its
// records taken as Python's (PythonStackReads::take): frames as
// interp/ruby_walk.h gives them after the fact (iseq, pc, finish flag).
//
// NOT async-signal-safe, not thread-safe: the process table's, under the
// sampler's lock.
#ifndef PROFIL_OUTSIDE_RUBY_BPF_H
#define PROFIL_OUTSIDE_RUBY_BPF_H

#include <sys/types.h>

#include "interp/ruby_layout.h"
#include "outside/python_bpf.h"

namespace profiling::outside {

// Samples of pid's threads in the map get records from now on; false for a
// layout the program cannot walk (a control frame read too large) or a map
// that is full.
bool add_ruby_process(PythonStackReads& reads, pid_t pid, const interp::RubyLayout& layout);
void forget_ruby_process(PythonStackReads& reads, pid_t pid);

}  // namespace profiling::outside

#endif  // PROFIL_OUTSIDE_RUBY_BPF_H
