// CPython frames from inside the program (issue 31, `profil run --inside`):
// where the preload runtime finds CPython, and how its dump names and merges
// the raw Python frames the sampling handler stored with each stack
// (sampler/python_sampling.h).
//
// Start-up (start_python_frames, NOT async-signal-safe: dlsym, dladdr1,
// mmap; run by the preload constructor, before sampling starts, when the
// program and its DT_NEEDED libraries, libpython among them, are mapped
// but no Python code has run): CPython is found by its dynamic symbols in
// the process (_PyRuntime, Py_Version or Py_GetVersion(),
// PyInterpreterState_Head, PyCode_Type, the evaluation loop with its size
// from its ELF symbol), never by reading files: libprofil depends on libc
// alone (src/CMakeLists.txt). The layout is interp/python_layout.h's. A
// python embedded by a later dlopen is not looked for. On the `auto` clock a
// CPython process samples on perf-signal instead of the perf ring: the
// ring's records are drained later, by whichever thread, so only a
// signal on the sampled thread reads its frames at the sample (an explicit
// `--clock perf` keeps the ring, without Python frames). PROFIL_INTERPRETER=0
// turns it all off (no Python frames, the clock as asked).
//
// The dump (PythonMerge, python_frame_names: ASYNC-SIGNAL-SAFE, as the
// whole dump is, preload_dump.cc; one dump at a time, so the tables below
// are the dump's alone): each stored stack's Python frames are named and
// merged into its native stack by interp/python_merge.h's rule, the same as
// from outside, into a stack of native addresses and
// format::kInterpreterFrameBase + n, where n is one (code object, line),
// 0 the misfit mark (interp::kMisfitFrame), 1 a loop call entering or
// leaving its frame (interp::kBetweenFramesFrame) and 2 a code object the
// dump could not read ("[python: code freed before the dump]"); their names
// go into the
// profraw (profraw_writer.h's InterpreterFrameSource). Names are read from
// the process's own memory with fault-safe loads, once per code object
// address, into tables mapped at start (untouched pages cost nothing).
//
// A code object freed before the dump: python_code.h's rule (a sample keeps
// the name its code object had) can only be kept as far as the dump can
// see. The handler stores the code object's address and a tag of its
// identity (sampler::code_tag: its name object's address and first line,
// two loads a frame), and a dump names each (address, tag) the first time
// it meets it — at the first checkpoint or final dump after the sample,
// within 50 ms of CPU time or 1/32 of the process's (preload_dump.cc) —
// from the code object at that address only when its tag is the same.
// So a code object freed and its address reused by another before that
// dump gives its frames "[python: code freed before the dump]", and later
// samples of the other code object there are named after it. (Until a
// loaded suite run, the address alone was stored and named once: three()
// of tests/python_progs/shares.py got the name of a module's top-level
// code that had run at its address during start-up, in 2 of 6 runs beside
// two busy loops.) A tag is 15 bits: two code objects of one address
// with the same tag, 1 in 32,768, share the first's name. A code object
// freed and not reused before the dump (what is there is no longer a code
// object: its type is not PyCode_Type) is unnamed the same way (from
// outside such frames are left out: there the reader names them within a
// millisecond). An imported module's top-level code runs once and is
// freed: its samples during start-up are the usual case.
#ifndef PROFIL_RUNTIME_PYTHON_INSIDE_H
#define PROFIL_RUNTIME_PYTHON_INSIDE_H

#include <cstdint>

#include "interp/python_merge.h"
#include "runtime/profraw_sources.h"

namespace profiling::runtime {

// Finds CPython in this process and, found, publishes the handler's
// PythonSampling (sampler/python_sampling.h). true when it did.
bool start_python_frames();
bool python_frames_on();

// [start, end) of the function named in this process, from its ELF
// symbol's size (dlsym, dladdr1); false without one. Host side (also
// ruby_inside.cc's).
bool function_range(const char* name, interp::EvalLoop* loop);

// Forwards each stack to inner with its Python frames named and merged.
class PythonMerge final : public StackVisitor {
 public:
  explicit PythonMerge(StackVisitor& inner) : inner_(inner) {}
  void visit(const uint64_t* pcs, uint32_t depth, bool truncated, uint64_t weight, int32_t tid,
             uint32_t observations, uint8_t gil) override;

 private:
  StackVisitor& inner_;
};

// The names of every interpreter frame address PythonMerge has given out.
const InterpreterFrameSource& python_frame_names();

}  // namespace profiling::runtime

#endif  // PROFIL_RUNTIME_PYTHON_INSIDE_H
