// profil_pystack PID [--time N]: each Python thread of a running CPython
// process with its stack, innermost first, read from outside (process_vm_readv:
// needs ptrace access). A development tool of the interpreter-frames layer
// (src/interp), not installed. "|" after a frame marks an eval-loop entry:
// the frames above it down to the previous mark are one C call of the loop.
// --time N: also walks each thread's raw frames N times (no naming, as a
// sampler would at each sample) and says what one walk costs.
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "interp/python_stack.h"
#include "interp/python_walk.h"

using profiling::interp::PythonStackReader;
using profiling::interp::WalkStatus;

int main(int argc, char **argv) {
  const bool timed = argc == 4 && std::string(argv[2]) == "--time";
  if (argc != 2 && !timed) {
    std::fprintf(stderr, "usage: profil_pystack PID [--time N]\n");
    return 2;
  }
  const pid_t pid = static_cast<pid_t>(std::atoi(argv[1]));
  std::string why;
  auto reader = PythonStackReader::open(pid, &why);
  if (!reader) {
    std::fprintf(stderr, "profil_pystack: %s\n", why.c_str());
    return 1;
  }
  const auto &target = reader->target();
  std::printf("CPython %d.%d in %s (bias 0x%" PRIx64 ")\n", target.major, target.minor, target.image.c_str(),
              target.bias);
  for (const auto &stack : reader->all_threads()) {
    std::printf("thread %d (PyThreadState 0x%" PRIx64 ")%s\n", stack.tid, stack.thread_state,
                stack.status == WalkStatus::kComplete ? "" : " [walk cut short]");
    for (const auto &frame : stack.frames) {
      if (!frame.named) {
        std::printf("    ??? (code object not readable)%s\n", frame.entry ? " |" : "");
        continue;
      }
      std::printf("    %s (%s:%d, def line %d)%s\n", frame.name.c_str(), frame.file.c_str(), frame.line,
                  frame.first_line, frame.entry ? " |" : "");
    }
    if (!timed) continue;
    const long walks = std::atol(argv[3]);
    profiling::interp::ProcessMemory memory(pid);
    profiling::interp::RawFrame raw[256];
    uint32_t frames = 0;
    const auto start = std::chrono::steady_clock::now();
    for (long i = 0; i < walks; ++i)
      frames = profiling::interp::walk_python_frames(target.layout, memory, stack.thread_state, raw, 256).count;
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    std::printf("    %ld walks of %u frames: %.2f us and %.1f reads a walk\n", walks, frames, us / walks,
                static_cast<double>(memory.calls()) / walks);
  }
  return 0;
}
