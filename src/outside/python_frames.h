// A CPython process's Python frames merged into its samples' native stacks
// from outside (issue 31), after the fact: the reader thread, as it unwinds
// a sample, reads the sampled thread's frame chain from the process's memory
// (process_vm_readv, interp/python_walk.h) and puts each Python frame just
// inside the native frame of the evaluation loop that ran it
// (interp/frames.h gives the rule), as an address of its own
// (format::kInterpreterFrameBase + an id per code object and line) named in
// the profile's frames. The native frames stay: `profil report
// --interpreter` chooses what a view shows.
//
// Read after the fact, the Python stack may have moved on since the kernel
// took the sample (the reader reads every millisecond while a process has
// Python frames): a sample whose Python frames do not fit its native stack
// (not as many evaluation-loop frames as entry frames) is not merged; it
// gets one frame, kMisfitFrame, just inside its innermost loop frame, so
// that every view and file counts it (misfits() too). A stack that moved
// within one call of the loop (another function of the same loop call)
// fits and cannot be told: docs/python.md measures how often.
//
// NOT async-signal-safe, not thread-safe: the process table's, under the
// sampler's lock.
#ifndef PROFIL_OUTSIDE_PYTHON_FRAMES_H
#define PROFIL_OUTSIDE_PYTHON_FRAMES_H

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "format/profile.h"
#include "interp/python_code.h"
#include "interp/python_merge.h"
#include "interp/python_process.h"
#include "interp/readers.h"
#include "outside/mappings.h"

namespace profiling::outside {

// The frame a sample gets whose Python stack did not fit (above).
inline constexpr const char* kMisfitFrame = interp::kMisfitFrame;
inline constexpr uint64_t kMisfitAddress = format::kInterpreterFrameBase;

class PythonFrames {
 public:
  // The CPython of pid, or nullptr with *why (interp::find_python's line).
  static std::unique_ptr<PythonFrames> open(pid_t pid, std::string* why);
  // The same for a process whose code maps a python program or libpython;
  // nullptr at once for any other (find_python reads /proc and ELF files).
  static std::unique_ptr<PythonFrames> open_if_python(pid_t pid, const std::vector<MappedCode>& code);

  // frames: one sample's stack, innermost first (the leaf, then the
  // callers); the Python frames of thread tid are put into it.
  void merge(pid_t tid, std::vector<uint64_t>* frames);
  // The same for a sample's leaf and callers as the process table keeps them.
  void merge(pid_t tid, uint64_t* leaf, std::vector<uint64_t>* callers);
  // A thread ended: its state is freed, its tid may come back as another.
  void forget_thread(pid_t tid) { threads_.forget(tid); }

  // The names of the addresses merge() made, for a profile's frames.
  void name_frames(std::map<uint64_t, std::vector<format::Frame>>* frames) const;
  const interp::PythonTarget& target() const { return target_; }

  uint64_t merged() const { return merged_; }    // samples given Python frames
  uint64_t misfits() const { return misfits_; }  // ...of which did not fit their native stack

 private:
  explicit PythonFrames(const interp::PythonTarget& target);
  bool in_eval_loop(uint64_t address) const {
    return address >= target_.eval_loop_start && address < target_.eval_loop_end;
  }
  uint64_t address_of(uint32_t code, int line);

  interp::PythonTarget target_;
  interp::ProcessMemory memory_;
  interp::PageCachedMemory cached_{memory_};  // a sample's reads, by the page
  interp::PythonThreads threads_;
  interp::PythonCodeNamer namer_;
  std::map<std::pair<uint32_t, int>, uint64_t> addresses_;  // (code id, line) -> its address
  std::vector<format::Frame> names_;                         // by address - kInterpreterFrameBase
  std::vector<interp::RawFrame> raw_;
  std::vector<uint64_t> python_;  // a sample's Python frames' addresses
  std::vector<uint64_t> merged_frames_;
  uint64_t merged_ = 0, misfits_ = 0;
};

// A process image's PythonFrames, looked for again whenever its code
// mappings changed (a libpython is mapped before the interpreter starts)
// while none was found.
class PythonLookup {
 public:
  PythonFrames* find(pid_t pid, const std::vector<MappedCode>& code) {
    if (frames_ == nullptr && looked_at_ != code.size()) {
      looked_at_ = code.size();
      frames_ = PythonFrames::open_if_python(pid, code);
    }
    return frames_.get();
  }
  PythonFrames* found() const { return frames_.get(); }

 private:
  std::unique_ptr<PythonFrames> frames_;
  size_t looked_at_ = SIZE_MAX;
};

}  // namespace profiling::outside

#endif  // PROFIL_OUTSIDE_PYTHON_FRAMES_H
