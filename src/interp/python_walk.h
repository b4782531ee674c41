// ASYNC-SIGNAL-SAFE: walk_python_frames allocates nothing, takes no lock,
// touches no stdio and throws nothing (compiled with -fno-exceptions). Its
// only calls are MemoryReader::read, one per frame (the whole frame struct)
// plus one or two for the thread state.
//
// The Python frames of one thread of a CPython process, innermost first, as
// raw frames (frames.h: code object address, instruction, kEntryFrame), read
// through a MemoryReader: the process's own memory in a signal handler
// (fault-safe loads) or another process's (process_vm_readv, readers.h).
//
// Entry frames, per frame model (python_layout.h):
// - ≤3.10: every PyFrameObject is run by its own PyEval_EvalFrameEx /
//   _PyEval_EvalFrameDefault call: every frame has kEntryFrame.
// - 3.11: a frame whose is_entry is set is the first frame one
//   _PyEval_EvalFrameDefault call ran; Python-to-Python calls within one
//   call of the loop are not entries.
// - 3.12+: each call of the loop pushes a shim frame owned by the C stack
//   (owner FRAME_OWNED_BY_CSTACK) below the frames it runs: shims are not
//   given out, the frame just inside one gets kEntryFrame.
// Frames still being set up (3.11+ "incomplete", before their RESUME) are
// given out like the others; their instruction lies before the code's first
// traceable one and names as the code's first line.
#ifndef PROFIL_INTERP_PYTHON_WALK_H
#define PROFIL_INTERP_PYTHON_WALK_H

#include <cstdint>

#include "interp/frames.h"
#include "interp/python_layout.h"

namespace profiling::interp {

// The largest frame struct read in one call (3.13's debug offsets may place
// fields anywhere: a layout whose frame_size exceeds it reads nothing).
inline constexpr int32_t kMaxPythonFrameRead = 256;

// Fills out[0..capacity) with the frames of the thread whose PyThreadState
// is at thread_state. A thread running no Python code has none (count 0,
// kComplete). When the array fills before the chain ends the result is
// kTruncated: the outermost frames are the ones missing.
WalkResult walk_python_frames(const PythonLayout& layout, MemoryReader& memory, uint64_t thread_state, RawFrame* out,
                              uint32_t capacity);

}  // namespace profiling::interp

#endif  // PROFIL_INTERP_PYTHON_WALK_H
