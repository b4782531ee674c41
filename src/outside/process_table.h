// What the outside sampler knows of the processes it samples: for each
// process image (a pid between two execs), its executable mappings with
// their objects read from files and the code table the unwinder walks the
// kernel's stack copies with (mappings.h), the CPU time its ended threads'
// samples did not take (thread_time.h), and the samples gathered so far,
// unwound at once and kept as distinct stacks (no stack copy is kept: the
// cost perf record pays on disk for --call-graph dwarf), each sample with
// its time (sample_times.h, issue 33).
//
// NOT async-signal-safe, not thread-safe: the sampler's sources feed it
// (source.h), under the sampler's lock.
#ifndef PROFIL_OUTSIDE_PROCESS_TABLE_H
#define PROFIL_OUTSIDE_PROCESS_TABLE_H

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "format/profraw.h"
#include "outside/mappings.h"
#include "outside/options.h"
#include "outside/kernel_symbols.h"
#include "outside/interpreter_lookup.h"
#include "outside/thread_time.h"
#include "perf/records.h"

namespace profiling::outside {

struct ImageProfile {
  format::ProfrawData data;
  std::string name;  // the program's short name (file stems)
  int generation = 0;  // 0 for a pid's first image, 1.. after each exec
  bool ended = false;
};

class ProcessTable {
 public:
  struct Options {
    // The options it samples with (the period, the stacks, the clock its
    // profiles say: "wall" with the wall clock's poller).
    SamplerOptions sampling;
    // Kernel mode is sampled ([kernel] rows). Else an ended thread's
    // unsampled time is mostly its time in the kernel (in_kernel), not
    // the part of a period it ended within.
    bool kernel_sampled = true;
    // Realtime minus monotonic at start: perf's timestamps (CLOCK_MONOTONIC)
    // to the Unix epoch.
    int64_t realtime_offset_ns = 0;
  };
  explicit ProcessTable(Options options);
  ~ProcessTable();

  // A process already running (attach), or the launched one's first image:
  // its mappings from /proc/PID/maps, its name from /proc.
  void add_running(pid_t pid, uint64_t now_ns);

  // Whether the events sample kernel mode (Options::kernel_sampled),
  // known once they are open.
  void set_kernel_sampled(bool sampled) { options_.kernel_sampled = sampled; }

  void on_mmap(const perf::Mmap& m);
  void on_comm(const perf::Comm& c);
  void on_fork(const perf::Task& t);
  void on_exit(const perf::Task& t);
  void on_lost(const perf::Lost& l);
  // An ended thread's count on one CPU's event (inherit_stat): what its
  // samples did not take becomes its image's ended_within_period time.
  void on_read(const perf::Read& r);
  // kernel: the sample was taken in kernel mode (its user registers and
  // stack are the system call's caller). blocked_periods: not a CPU sample
  // but a thread seen blocked, standing for that many periods of wall time
  // (the wall clock's poller); it takes no part in the CPU time's account.
  void on_sample(const perf::Sample& s, bool kernel, uint64_t blocked_periods = 0);

  // The profiles gathered since the last take: every image with samples
  // (and, when final, every image), each holding only what came since;
  // their accumulators start again. Images that ended are forgotten.
  std::vector<ImageProfile> take(uint64_t now_ns, bool final);
  // Every image that has ended (exit or exec), whole, and forgotten: the
  // part of a run --no-wait writes when its program ends, while what is
  // still running goes on being sampled.
  std::vector<ImageProfile> take_ended(uint64_t now_ns);
  // The processes whose last image has not ended.
  std::vector<pid_t> running() const;

  uint64_t samples() const { return samples_; }
  // How often the rings should be read (ms) for the interpreter frames'
  // sake (python_frames.h): every millisecond while the last sample given
  // them had them read after the fact (the sooner, the more often they
  // are the ones the sample was taken in); else 100, read at the sample too
  // (issue 31's cost: 20 ms was a quarter of the frames' cost at 1 kHz; a
  // code object named once per 100 ms of samples around it, a process's last
  // samples keep names read in its life: python_frames.h). Any thread may ask.
  int interpreter_poll_ms() const { return interpreter_poll_ms_.load(std::memory_order_relaxed); }
  uint64_t unknown_samples() const { return unknown_samples_; }  // of no process we know
  // The BPF program reading Python frames at the sample (PythonReads), the sampler's.
  void set_python_reads(PythonStackReads* at_sample) { python_.at_sample = at_sample; }
  void load_python_reads_with(std::function<PythonStackReads*()> load) { python_.load_at_sample = std::move(load); }
  // How the samples got their Python and Ruby frames, so far.
  const PythonReads& python_reads() const { return python_; }
  const RubyReads& ruby_reads() const { return ruby_; }
  uint64_t lost() const { return lost_; }

 private:
  struct Image;
  Image* current(pid_t pid);
  ImageProfile profile_of(pid_t pid, Image& image, uint64_t now_ns);
  void settle_ended_threads();
  Image* image_at(pid_t pid, uint64_t time);
  Image& start_image(pid_t pid, uint64_t time, const Image* from);
  std::string thread_name(pid_t pid, pid_t tid);

  Options options_;
  std::map<pid_t, std::vector<std::unique_ptr<Image>>> images_;  // by pid, oldest first
  ObjectFiles files_;
  // Each thread's latest name (tid -> comm): from /proc for the threads
  // already running, a new thread's from its creator (it inherits the
  // comm), then every COMM record (an exec, prctl(PR_SET_NAME),
  // pthread_setname_np(3)). A profile names each of its threads so.
  std::unordered_map<pid_t, std::string> thread_names_;
  std::vector<pid_t> ended_threads_;  // since the last take: their names go then
  uint64_t last_take_ns_ = 0;
  uint64_t samples_ = 0, unknown_samples_ = 0, lost_ = 0;
  std::atomic<int> interpreter_poll_ms_{100};
  PythonReads python_;
  RubyReads ruby_;
  std::unique_ptr<KernelSymbols> kernel_symbols_;  // read at the first profile with kernel frames
  ThreadTimes threads_;  // the CPU time of ended threads beyond their samples
};

}  // namespace profiling::outside

#endif  // PROFIL_OUTSIDE_PROCESS_TABLE_H
