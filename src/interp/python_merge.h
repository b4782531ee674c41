// Merging one sample's interpreter frames into its native stack: the rule
// of frames.h as one function, for every sampler that reads them (from
// outside after the fact, outside/python_frames.cc; from inside at the
// sample, runtime/python_inside.h at the dump) and every runtime whose
// frames follow that rule: CPython's, and Ruby's (issue 34:
// outside/ruby_frames.cc, with rb_vm_exec as the loop and its own misfit
// address; the kMisfitFrame and kBetweenFramesFrame names below are
// CPython's).
//
// ASYNC-SIGNAL-SAFE: merge_python_frames allocates nothing, takes no lock
// and throws nothing (the preload runtime's dump runs it in a signal
// handler); it works on the caller's arrays alone.
#ifndef PROFIL_INTERP_PYTHON_MERGE_H
#define PROFIL_INTERP_PYTHON_MERGE_H

#include <cstdint>

#include "interp/frames.h"

namespace profiling::interp {

// The frame a sample gets whose Python frames do not fit its native stack,
// named in the profile (at the sampler's misfit address): from outside the
// stack moved on before it was read; from inside (read at the sample) a
// chain read while the interpreter was changing it.
inline constexpr const char* kMisfitFrame = "[python: the stack moved before it was read]";
// The frame a loop call gets that is entering or leaving its Python frame
// at the sample (at_sample below).
inline constexpr const char* kBetweenFramesFrame = "[python: a call entered or left]";

// The native code of the interpreter's evaluation loop, [start, end).
struct EvalLoop {
  uint64_t start = 0, end = 0;
  bool contains(uint64_t address) const { return address >= start && address < end; }
};

struct MergeResult {
  uint32_t count = 0;  // frames written to out
  bool fits = false;   // false: out is the native stack with misfit_address in it
};

// native[0..native_count): a sample's stack, innermost first. raw[0..walk.count)
// its interpreter frames (innermost first, as the walker gave them) and
// python[i] the address raw[i] is shown at (0: a frame that could not be
// named, left out). Writes to out (capacity >= native_count + walk.count + 1)
// the merged stack: each eval-loop frame preceded by the interpreter frames
// it ran (frames.h). When they do not fit (an eval-loop frame left without
// frames, frames no eval-loop frame took, a walk not complete), out is the
// native stack with misfit_address just inside its innermost eval-loop
// frame. A stack without eval-loop frames is copied as it is (fits).
//
// at_sample: the frames were read when the native stack was taken (inside,
// by the sampling handler, on the stopped thread). Then one loop call more
// than entry frames is the innermost loop call entering its frame (before
// it links it into the thread state: PyEval_EvalFrameEx's prologue on 2.7,
// 1-2 % of a call-heavy program's samples) or leaving it (after it unlinked
// it: 3.10's _Py_CheckFunctionResult at the loop's exit), not a stack that
// moved: it fits, and that loop frame gets between_address (named
// kBetweenFramesFrame) as its one frame. Read after the fact, the same
// shape is as often a stack that moved on, and stays a misfit.
//
// native_truncated: the native stack was cut before its outermost frame
// (the kernel's copy of the stack ended: a recursion 40 calls deep is ~40
// KiB of C stack on ≤3.10). Interpreter frames no loop frame took are then
// the outer calls' whose loop frames were cut: put after the native
// stack's last frame, outermost last, and the stack fits.
MergeResult merge_python_frames(const uint64_t* native, uint32_t native_count, const RawFrame* raw,
                                const uint64_t* python, WalkResult walk, EvalLoop loop, uint64_t misfit_address,
                                uint64_t* out, uint32_t capacity, bool at_sample = false,
                                uint64_t between_address = 0, bool native_truncated = false);

}  // namespace profiling::interp

#endif  // PROFIL_INTERP_PYTHON_MERGE_H
