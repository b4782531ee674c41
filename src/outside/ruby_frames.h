// A Ruby process's frames merged into its samples' native stacks from
// outside (issue 34), after the fact: the reader thread, as it unwinds a
// sample, finds the sampled thread's execution context through the VM
// (interp/ruby_process.h: no TLS read), walks its control frames
// (process_vm_readv, interp/ruby_walk.h) and puts each Ruby frame just
// inside the native rb_vm_exec frame that ran it (frames.h's rule, by
// interp::merge_python_frames), as an address of its own
// (format::kRubyFrameBase + an id per iseq and line) named in the
// profile's frames: label (method, "block in m", "<main>"), file, line.
// The native frames stay: `profil report --interpreter` chooses the view.
//
// Read at the sample where the kernel allows BPF (ruby_bpf.h: the program
// that reads CPython's frames walks the control frames as the sample is
// taken, and merge() is given that walk); otherwise, and for a thread's
// first sample (its rb_thread_t is found then), after the fact.
//
// Read after the fact, the Ruby stack may have moved on since the kernel
// took the sample (the reader reads every millisecond while a process has
// Ruby frames read so): a sample whose frames do not fit its native stack
// (not as many rb_vm_exec frames as entry frames) is not merged; it gets
// one frame, kRubyMisfitFrame, just inside its innermost rb_vm_exec frame.
// Read at the sample, one rb_vm_exec more than entry frames is the
// innermost call leaving its frame (vm_exec_core's leave pops it, then
// rb_vm_exec returns): kRubyEnteringFrame inside that rb_vm_exec.
//
// NOT async-signal-safe, not thread-safe: the process table's, under the
// sampler's lock.
#ifndef PROFIL_OUTSIDE_RUBY_FRAMES_H
#define PROFIL_OUTSIDE_RUBY_FRAMES_H

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "format/profile.h"
#include "interp/readers.h"
#include "interp/ruby_code.h"
#include "interp/ruby_process.h"
#include "outside/interpreter_frames.h"
#include "outside/mappings.h"
#include "outside/python_bpf.h"

namespace profiling::outside {

inline constexpr const char* kRubyMisfitFrame = "[ruby: the stack moved before it was read]";
inline constexpr uint64_t kRubyMisfitAddress = format::kRubyFrameBase;
// An iseq that could not be read when it was named (freed, or its process
// ended).
inline constexpr const char* kRubyUnnamedFrame = "[ruby: frame not readable when named]";
inline constexpr uint64_t kRubyUnnamedAddress = format::kRubyFrameBase + 1;

inline constexpr const char* kRubyEnteringFrame = "[ruby: a call entered or left]";
inline constexpr uint64_t kRubyEnteringAddress = format::kRubyFrameBase + 2;

struct PythonReads;  // python_frames.h

// How a tree's samples got their Ruby frames (said in the run's summary,
// as PythonReads's are).
struct RubyReads {
  uint64_t merged = 0;             // samples given Ruby frames
  uint64_t read_at_sample = 0;     // walks the BPF program made as the sample was taken
  uint64_t read_late = 0;          // walks read after the fact
  uint64_t misfits_at_sample = 0;  // ...of each, those that did not fit their native stack
  uint64_t misfits_late = 0;
  std::string not_read;  // a Ruby whose frames were not read, and why ("Ruby 3.2: frames not read, left native")
};

class RubyFrames final : public InterpreterFrames {
 public:
  // The Ruby of a process whose code maps a libruby or ruby program, else
  // nullptr (reads->not_read says why when it is a Ruby not read). reads
  // outlives the RubyFrames; python (nullptr: after the fact only) holds
  // the BPF program that reads frames at the sample, loaded when a Ruby is
  // found (PythonReads::reads_at_sample), which outlives it too.
  static std::unique_ptr<RubyFrames> open_if_ruby(pid_t pid, const std::vector<MappedCode>& code, RubyReads* reads,
                                                  PythonReads* python = nullptr);
  ~RubyFrames() override;

  using InterpreterFrames::merge;
  void merge(pid_t tid, uint64_t time, bool native_truncated, std::vector<uint64_t>* frames) override;
  void forget_thread(pid_t tid) override {
    threads_.forget(tid);
    if (at_sample_ != nullptr) at_sample_->forget_thread(tid);
    ahead_of_.erase(tid);
  }
  void name_frames(std::map<uint64_t, std::vector<format::Frame>>* frames) const override;
  // The next samples are read after the fact too, until the BPF program
  // has the thread.
  bool read_late() const override { return read_late_; }
  const interp::RubyTarget& target() const { return target_; }

 private:
  RubyFrames(const interp::RubyTarget& target, RubyReads* reads, PythonStackReads* at_sample);
  // The walk of tid's frames after the fact into raw_; false without one.
  bool read_late(pid_t tid, interp::WalkResult* walk);
  // Where a thread's last walk read its VM stack (issue 34's cost): the
  // next sample's walk reads the same ranges, fetched in one call
  // (interp::PrefetchedMemory) before it, and anything else by the page.
  // The thread's execution context pointer is read with them (a Fiber
  // switch, which changes it, costs a second call).
  struct Ahead {
    static constexpr size_t kElsewhere = 4;
    uint64_t ec = 0;
    uint64_t stack = 0, values_end = 0;  // [stack, values_end): its frames' environments
    uint64_t frames = 0, end = 0;        // [frames, end): its control frames
    // Environments outside the VM stack (a block's or <main>'s, moved to
    // the heap when captured), the first few.
    uint64_t elsewhere[kElsewhere] = {};
    size_t elsewhere_count = 0;
  };
  // The execution context of the thread whose pointer to it is at slot,
  // its walk's ranges fetched with it; 0 when it cannot be read.
  uint64_t fetch_ahead(pid_t tid, uint64_t slot);
  void remember_ahead(pid_t tid, uint64_t ec);

  interp::RubyTarget target_;
  RubyReads& reads_;
  PythonStackReads* at_sample_;  // nullptr: after the fact only
  bool read_late_ = true;
  interp::ProcessMemory memory_;
  interp::PageCachedMemory cached_{memory_};  // a sample's reads, by the page
  interp::PrefetchedMemory ahead_{target_.pid, cached_};  // ...and before them, the ranges of the last walk
  std::unordered_map<pid_t, Ahead> ahead_of_;
  interp::RubyThreads threads_;
  interp::RubyCodeNamer namer_;
  FrameNames<interp::RubyCodeNamer> names_{format::kRubyFrameBase,
                                           {kRubyMisfitFrame, kRubyUnnamedFrame, kRubyEnteringFrame}};
  std::vector<interp::RawFrame> raw_;
  std::vector<uint64_t> shown_;  // a sample's Ruby frames' addresses
  std::vector<uint64_t> merged_frames_;
};

}  // namespace profiling::outside

#endif  // PROFIL_OUTSIDE_RUBY_FRAMES_H
