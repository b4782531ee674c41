// One CPython process's Python stacks, read and named from outside: the
// host-side convenience over find_python, PythonThreads, walk_python_frames
// and PythonCodeNamer (profil_pystack and the tests use it; a sampler keeps
// the raw frames and names them later instead).
//
// NOT async-signal-safe: host side, allocates; one thread at a time.
#ifndef PROFIL_INTERP_PYTHON_STACK_H
#define PROFIL_INTERP_PYTHON_STACK_H

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "interp/python_code.h"
#include "interp/python_process.h"
#include "interp/readers.h"

namespace profiling::interp {

struct PythonFrame {
  std::string name, file;
  int first_line = 0;
  int line = 0;        // -1: the line table gives none
  bool entry = false;  // kEntryFrame
  bool named = false;  // false: the code object could not be read
};

struct PythonStack {
  pid_t tid = 0;
  uint64_t thread_state = 0;
  std::vector<PythonFrame> frames;  // innermost first
  WalkStatus status = WalkStatus::kComplete;
};

class PythonStackReader {
 public:
  // nullptr with *why (find_python's line) when pid has no CPython read here.
  static std::unique_ptr<PythonStackReader> open(pid_t pid, std::string* why);

  const PythonTarget& target() const { return target_; }
  // The stack of thread tid, nullopt when it has no PyThreadState.
  std::optional<PythonStack> thread(pid_t tid, uint32_t depth = 256);
  std::vector<PythonStack> all_threads(uint32_t depth = 256);

 private:
  explicit PythonStackReader(const PythonTarget& target)
      : target_(target),
        memory_(target.pid),
        threads_(target_, memory_),
        namer_(target_.layout, memory_, target_.code_type) {}
  PythonStack read(pid_t tid, uint64_t thread_state, uint32_t depth);

  PythonTarget target_;
  ProcessMemory memory_;
  PythonThreads threads_;
  PythonCodeNamer namer_;
};

}  // namespace profiling::interp

#endif  // PROFIL_INTERP_PYTHON_STACK_H
