// Walking a Ruby thread's control frames (issue 34): from its execution
// context (rb_execution_context_t), the frames the VM runs, innermost
// first, as frames.h's RawFrame: code = the frame's rb_iseq_t, instruction =
// its pc (ruby_code.h turns both into method, file and line), kEntryFrame
// on a frame with VM_FRAME_FLAG_FINISH (pushed by a C call into the VM:
// one native rb_vm_exec runs the frames up to and including it, which is
// frames.h's merge rule as it is).
//
// Left out: C frames (a C method such as Array#each, a C block: their
// native frames name them, and Ruby 3.1 keeps a C method's name only as an
// ID whose table libruby does not export), the thread's outermost dummy
// frame, and a frame whose pc is not set yet.
//
// ASYNC-SIGNAL-SAFE: walk_ruby_frames allocates nothing, takes no lock and
// throws nothing; it reads through the MemoryReader alone.
#ifndef PROFIL_INTERP_RUBY_WALK_H
#define PROFIL_INTERP_RUBY_WALK_H

#include <cstdint>

#include "interp/frames.h"
#include "interp/ruby_layout.h"

namespace profiling::interp {

// The frames of the execution context at ec, at most capacity.
WalkResult walk_ruby_frames(const RubyLayout& layout, MemoryReader& memory, uint64_t ec, RawFrame* out,
                            uint32_t capacity);

}  // namespace profiling::interp

#endif  // PROFIL_INTERP_RUBY_WALK_H
