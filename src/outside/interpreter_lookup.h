// A process image's interpreter frames (interpreter_frames.h): its CPython
// (python_frames.h) or its Ruby (ruby_frames.h), looked for again whenever
// its code mappings changed (a libpython or libruby is mapped after the
// program) while none was found.
//
// NOT async-signal-safe, not thread-safe: the process table's, under the
// sampler's lock.
#ifndef PROFIL_OUTSIDE_INTERPRETER_LOOKUP_H
#define PROFIL_OUTSIDE_INTERPRETER_LOOKUP_H

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "outside/interpreter_frames.h"
#include "outside/mappings.h"
#include "outside/python_frames.h"
#include "outside/ruby_frames.h"

namespace profiling::outside {

class InterpreterLookup {
 public:
  InterpreterFrames* find(pid_t pid, const std::vector<MappedCode>& code, PythonReads* python, RubyReads* ruby) {
    if (frames_ == nullptr && looked_at_ != code.size()) {
      looked_at_ = code.size();
      frames_ = PythonFrames::open_if_python(pid, code, python);
      if (frames_ == nullptr) frames_ = RubyFrames::open_if_ruby(pid, code, ruby, python);
    }
    return frames_.get();
  }
  InterpreterFrames* found() const { return frames_.get(); }

 private:
  std::unique_ptr<InterpreterFrames> frames_;
  size_t looked_at_ = SIZE_MAX;
};

}  // namespace profiling::outside

#endif  // PROFIL_OUTSIDE_INTERPRETER_LOOKUP_H
