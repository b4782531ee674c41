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
// Read at the sample where the kernel allows BPF (python_bpf.h: a program
// on the sampling event walks the chain as the sample is taken, and
// merge() is given that walk); otherwise, and for a thread's first sample
// (its thread state is found then), after the fact.
//
// Read after the fact, the Python stack may have moved on since the kernel
// took the sample (the reader reads every millisecond while a process has
// Python frames; the samples of a thread taken before its last read share
// that read): a sample whose Python frames do not fit its native stack
// (not as many evaluation-loop frames as entry frames: none at all when
// the thread ran no Python code by then) is not merged; it
// gets one frame, kMisfitFrame, just inside its innermost loop frame, so
// that every view and file counts it (PythonReads::misfits_* too). A stack that moved
// within one call of the loop (another function of the same loop call)
// fits and cannot be told: docs/python.md measures how often.
//
// Each sample of a Python thread also says whether the thread held the
// GIL (gil(), issue 31; interp/python_gil.h): read by the BPF program at
// the sample, or after the fact with its frames (then approximate: the
// GIL may have changed hands since; one 8-16 byte read more).
//
// NOT async-signal-safe, not thread-safe: the process table's, under the
// sampler's lock.
#ifndef PROFIL_OUTSIDE_PYTHON_FRAMES_H
#define PROFIL_OUTSIDE_PYTHON_FRAMES_H

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "format/profile.h"
#include "interp/python_code.h"
#include "interp/python_gil.h"
#include "interp/python_merge.h"
#include "interp/python_process.h"
#include "interp/readers.h"
#include "outside/interpreter_frames.h"
#include "outside/mappings.h"
#include "outside/python_bpf.h"

namespace profiling::outside {

// The frame a sample gets whose Python stack did not fit (above).
inline constexpr const char* kMisfitFrame = interp::kMisfitFrame;
inline constexpr uint64_t kMisfitAddress = format::kInterpreterFrameBase;
// A Python frame whose code object could not be read when it was named:
// read at the sample, named after (the BPF way), the process may have
// freed it or ended by then (its last samples, read after its exit).
inline constexpr const char* kUnnamedFrame = "[python: code object gone before it was named]";
inline constexpr uint64_t kUnnamedAddress = format::kInterpreterFrameBase + 1;
// The innermost call of the evaluation loop of a sample read at the sample,
// before it linked its frame or after it unlinked it (python_frames.cc).
inline constexpr const char* kEnteringFrame = interp::kBetweenFramesFrame;
inline constexpr uint64_t kEnteringAddress = format::kInterpreterFrameBase + 2;

// The frame a sample read after the fact gets whose thread's state was not
// in the interpreter's list when read (python_frames.cc), just inside its
// innermost loop frame; counted in PythonReads::no_thread_state.
inline constexpr const char* kNoStateFrame = "[python: the thread's state was not found when read]";
inline constexpr uint64_t kNoStateAddress = format::kInterpreterFrameBase + 3;

// How a tree's samples got their Python frames (said in the run's summary),
// and the BPF program that reads them at the sample, where one loaded.
struct PythonReads {
  PythonStackReads* at_sample = nullptr;  // nullptr: after the fact only
  // Loads the BPF program and attaches it to the events, at the first
  // interpreter process found rather than at every run (issue 31's cost:
  // ~9.5 ms of profil's CPU a run, for a program without Python too); the
  // samples before it are read after the fact, as a thread's first is.
  std::function<PythonStackReads*()> load_at_sample;
  // at_sample, loaded first if it was not yet (once: nullptr after a refusal).
  PythonStackReads* reads_at_sample() {
    if (load_at_sample) {
      const std::function<PythonStackReads*()> load = std::move(load_at_sample);
      load_at_sample = nullptr;
      at_sample = load();
    }
    return at_sample;
  }
  uint64_t merged = 0;            // samples given Python frames
  uint64_t read_at_sample = 0;    // walks the BPF program made as the sample was taken
  uint64_t read_late = 0;         // samples whose walk was read after the fact
  uint64_t misfits_at_sample = 0;  // ...of each, those that did not fit their native stack
  uint64_t misfits_late = 0;
  uint64_t no_thread_state = 0;  // read after the fact: kNoStateFrame (of read_late)
  uint64_t walks_late = 0;       // the walks read_late's samples got: one may serve several (walk_late)
};

class PythonFrames final : public InterpreterFrames {
 public:
  // The CPython of pid, or nullptr with *why (interp::find_python's line).
  // reads: how frames are read, and the counts of the reads; it outlives
  // the PythonFrames.
  static std::unique_ptr<PythonFrames> open(pid_t pid, std::string* why, PythonReads* reads);
  // The same for a process whose code maps a python program or libpython;
  // nullptr at once for any other (find_python reads /proc and ELF files).
  static std::unique_ptr<PythonFrames> open_if_python(pid_t pid, const std::vector<MappedCode>& code,
                                                      PythonReads* reads);
  ~PythonFrames() override;

  using InterpreterFrames::merge;
  void merge(pid_t tid, uint64_t time, bool native_truncated, std::vector<uint64_t>* frames) override;
  uint8_t gil() const override { return gil_state_; }
  void forget_thread(pid_t tid) override {
    threads_.forget(tid);
    late_.erase(tid);
    given_.erase(tid);
    if (at_sample_ != nullptr) at_sample_->forget_thread(tid);
  }

  // The names of the addresses merge() made, for a profile's frames.
  void name_frames(std::map<uint64_t, std::vector<format::Frame>>* frames) const override;
  const interp::PythonTarget& target() const { return target_; }
  // The next samples are read after the fact too, until the BPF program
  // has the thread.
  bool read_late() const override { return read_late_; }


 private:
  PythonFrames(const interp::PythonTarget& target, PythonReads* reads);
  void find_gil();
  // frames: the native stack with address just inside its innermost loop frame.
  void mark(uint64_t address, std::vector<uint64_t>* frames);
  bool in_eval_loop(uint64_t address) const {
    return address >= target_.eval_loop_start && address < target_.eval_loop_end;
  }

  interp::PythonTarget target_;
  PythonReads& reads_;
  PythonStackReads* at_sample_;  // reads_.at_sample, or nullptr where the program cannot walk this layout
  bool read_late_ = true;
  std::unordered_set<pid_t> given_;  // threads put in the program's map
  interp::ProcessMemory memory_;
  // A sample read after the fact: the pages its thread's last walk read
  // (thread state, C stack's frame pointer, data stack chunk, GIL, code
  // objects) fetched first in ONE process_vm_readv, then any other page
  // one by one beneath the page cache. Page by page, a sample on CPython
  // 3.12 made 4.3 calls (strace; ~12 us each on a loaded machine); it is
  // most of what the late read costs above the wake-ups (issue 31).
  interp::PrefetchedMemory ahead_{target_.pid, memory_};
  interp::PageCachedMemory cached_{ahead_};  // a sample's reads, by the page
  // By thread, its last walk read after the fact: the pages it read, and
  // the walk itself with the time it began. A later sample of the thread
  // taken before that time gets the same walk, not a read of its own: both
  // are after the sample, and that one sooner after it. At 4 kHz a round
  // of the rings (1 ms) has ~4 samples of a busy thread, and each read
  // the same ~4 pages again: process_vm_readv was 44 % of the reader's CPU
  // read after the fact, 14 of 22 us a sample (issue 31's cost).
  struct LateRead {
    uint64_t pages[interp::PrefetchedMemory::kRanges] = {};
    size_t page_count = 0;
    uint64_t began_ns = 0;  // CLOCK_MONOTONIC, the samples' clock (perf_source.cc)
    interp::WalkResult walk;
    std::vector<interp::RawFrame> raw;
    uint8_t gil = format::kGilUnknown;
  };
  std::unordered_map<pid_t, LateRead> late_;
  void give_threads();  // every thread of the interpreter to the BPF program
  // A late read for a sample of tid at time: into raw_, *walk and gil_state_.
  void walk_late(pid_t tid, uint64_t time, uint64_t state, interp::WalkResult* walk);
  interp::PythonThreads threads_;
  // Where the GIL's holder is (issue 31), and the last sample's state.
  interp::PythonGil gil_;
  uint8_t gil_state_ = format::kGilUnknown;
  interp::PythonCodeNamer namer_;
  FrameNames<interp::PythonCodeNamer> names_{format::kInterpreterFrameBase,
                                             {kMisfitFrame, kUnnamedFrame, kEnteringFrame, kNoStateFrame}};
  std::vector<interp::RawFrame> raw_;
  std::vector<uint64_t> python_;  // a sample's Python frames' addresses
  std::vector<uint64_t> merged_frames_;
};

}  // namespace profiling::outside

#endif  // PROFIL_OUTSIDE_PYTHON_FRAMES_H
