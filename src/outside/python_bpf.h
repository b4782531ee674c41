// Python frames read at the moment of the sample, in the kernel (issue 31):
// the host side of bpf/python_stacks.bpf.c. The program is loaded once, when
// the first interpreter process is found (PythonReads::load_at_sample; libbpf,
// from the skeleton the build generates), and attached to every sampling event
// the perf source has opened or opens later (PERF_EVENT_IOC_SET_BPF; an event
// inherited by a new thread or child carries it). For each sample of a thread
// whose PyThreadState the host has put in its map it walks the thread's frame
// chain, as interp/python_walk.cc does from outside, and writes the raw frames
// with the time into a ring of its own; the host drains that ring before it
// reads the samples the ring's records came before, and pairs each sample with
// its thread's record nearest the sample's time (the program runs in the
// kernel's overflow path, on the same CPU, microseconds from the time the
// sample carries: a few µs after it on this 6.18 kernel; the same thread's
// samples are a period apart).
//
// Where the kernel refuses (no CAP_BPF/CAP_PERFMON, no BTF, an old kernel)
// open() says why and the frames are read after the fact
// (python_frames.h) as before; `--no-bpf` asks for that way.
//
// A thread is put in the map the first time one of its samples is read
// after the fact (its state is only then known): that first sample, and a
// sample whose record the ring had no room for, are read after the fact.
//
// The same program reads Ruby's frames (issue 34: a perf event carries one
// program): ruby_bpf.h puts a Ruby process in its map; its threads, their
// records and the ring are this class's, as a Python process's are.
//
// NOT async-signal-safe, not thread-safe: the process table's, under the
// sampler's lock (the perf source attaches under its owner's).
#ifndef PROFIL_OUTSIDE_PYTHON_BPF_H
#define PROFIL_OUTSIDE_PYTHON_BPF_H

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "interp/frames.h"
#include "interp/python_gil.h"
#include "interp/python_layout.h"

struct python_stacks;  // the generated skeleton
struct ring_buffer;

namespace profiling::outside {

class PythonStackReads {
 public:
  // Loads the program for events of this period; nullptr with *why (one
  // clause: what refused it).
  static std::unique_ptr<PythonStackReads> open(uint64_t period_ns, std::string* why);
  ~PythonStackReads();
  PythonStackReads(const PythonStackReads&) = delete;
  PythonStackReads& operator=(const PythonStackReads&) = delete;

  // The program runs at each sample of this event (and of those it is
  // inherited by); false with *why when the kernel refuses.
  bool attach(int event_fd, std::string* why);

  // Samples of pid's threads get records from now on, walked with layout;
  // false for a layout the program cannot walk (a frame read too large).
  bool add_process(pid_t pid, const interp::PythonLayout& layout);
  // Where pid's GIL holder is read (interp/python_gil.h; issue 31): known
  // later than the layout on 3.12+. A GIL the program cannot read (a
  // `locked` not 8 bytes after the holder) gives no state.
  void set_gil(pid_t pid, const interp::PythonGil& gil);
  void forget_process(pid_t pid);
  void add_thread(pid_t tid, uint64_t thread_state);
  void forget_thread(pid_t tid);

  // Every record written so far, kept by thread until taken.
  void drain();
  // The frames read at the sample of tid taken at time (ns, CLOCK_MONOTONIC):
  // false when there is no record for it (then read it after the fact).
  // Records of the thread older than the sample's are dropped.
  // *gil: whether the thread held the GIL (format::kGil*).
  bool take(pid_t tid, uint64_t time, std::vector<interp::RawFrame>* frames, interp::WalkResult* walk,
            uint8_t* gil = nullptr);

  // The oldest record of tid, whatever its time (tests).
  bool take_oldest(pid_t tid, std::vector<interp::RawFrame>* frames, interp::WalkResult* walk, uint8_t* gil = nullptr);

  struct Counters {
    uint64_t records = 0;    // written by the program
    uint64_t ring_full = 0;  // not written: no room in the ring
    uint64_t no_thread = 0;  // samples of a thread not in the map yet
  };
  Counters counters() const;

  // The program's map of Ruby processes (ruby_bpf.h fills it).
  int ruby_processes_fd() const;

 private:
  PythonStackReads() = default;
  // The program loaded, its hash maps preallocated or not; nullptr with *why.
  static std::unique_ptr<PythonStackReads> load(uint64_t pidns_dev, uint64_t pidns_ino, uint32_t ring_bytes,
                                                bool preallocated, std::string* why);
  static int on_record(void* self, void* data, size_t size);

  struct Record {
    uint64_t time;
    interp::WalkResult walk;
    uint8_t gil;
    std::vector<interp::RawFrame> frames;
  };
  python_stacks* skeleton_ = nullptr;
  ring_buffer* ring_ = nullptr;
  uint64_t pairing_window_ns_ = 0;  // a record this near a sample's time is its own
  std::unordered_map<pid_t, std::deque<Record>> records_;  // by thread, oldest first
  // The frames of records taken, their storage reused by the next records
  // (issue 31's cost: no allocation a sample).
  std::vector<std::vector<interp::RawFrame>> spare_;
  void recycle(Record& record);
};

}  // namespace profiling::outside

#endif  // PROFIL_OUTSIDE_PYTHON_BPF_H
