// What the raw dump's writer (profraw_writer.h) reads besides the pc
// table: the sampled stacks, and the names of the interpreter frames they
// hold. Interfaces only: the preload runtime's dump implements them over
// its stack table (preload_dump.cc) and its Python frames
// (python_inside.h), the tests over plain arrays.
//
// ASYNC-SIGNAL-SAFE: every implementation, as write_profraw calls them.
#ifndef PROFIL_RUNTIME_PROFRAW_SOURCES_H
#define PROFIL_RUNTIME_PROFRAW_SOURCES_H

#include <cstdint>

namespace profiling::runtime {

// The sampled stacks, as the writer walks them: an interface the stack
// table implements (or anything the tests build). Both calls run inside
// write_profraw, so they must be async-signal-safe too: no allocation, no
// locks.
class StackVisitor {
 public:
  // pcs[0] is the sampled PC, pcs[1..depth) the callers' return addresses
  // as found on the stack; truncated: the unwind stopped before the
  // outermost frame. depth >= 1; depths above format::profraw::kMaxStackDepth
  // are cut there (and marked truncated). tid: the thread it was taken in
  // (0 unknown); the writer names each thread once, after the stacks
  // (sampler/thread_names.h). observations: the signals or ring records
  // behind weight (issue 22). gil: whether the thread held CPython's GIL
  // (format::kGil*, issue 31; unknown for every other stack).
  virtual void visit(const uint64_t* pcs, uint32_t depth, bool truncated, uint64_t weight, int32_t tid,
                     uint32_t observations, uint8_t gil) = 0;

 protected:
  ~StackVisitor() = default;
};

class StackSource {
 public:
  // Calls visitor.visit once per stored stack (other threads may still be
  // adding: the writer counts what it was given).
  virtual void for_each_stack(StackVisitor& visitor) const = 0;
  // Weighted samples whose stack could not be stored.
  virtual uint64_t dropped_stacks() const = 0;

 protected:
  ~StackSource() = default;
};

// The names of the interpreter frames the stacks hold
// (format::kInterpreterFrameBase + n: Python functions at a line, issue 31),
// as the writer walks them after the threads. Async-signal-safe too.
class InterpreterFrameVisitor {
 public:
  virtual void frame(uint64_t address, int64_t line, const char* function, uint32_t function_length,
                     const char* file, uint32_t file_length) = 0;

 protected:
  ~InterpreterFrameVisitor() = default;
};

class InterpreterFrameSource {
 public:
  virtual void for_each_frame(InterpreterFrameVisitor& visitor) const = 0;

 protected:
  ~InterpreterFrameSource() = default;
};

}  // namespace profiling::runtime

#endif  // PROFIL_RUNTIME_PROFRAW_SOURCES_H
