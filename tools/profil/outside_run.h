// Sampling from outside for `profil run --outside` and `profil attach`
// (issue 21): an outside::Sampler, with the clock of a run around it (stop
// after --duration and let the program run on unprofiled; a snapshot every
// --every, each file holding only its interval), its profiles handed to
// the run's sinks (run_convert.h) like the inside source's dumps.
//
// Snapshots from outside need nothing of the program (no signal, no
// SIGUSR1/2 it may use): the sampler's own thread cuts them.
#ifndef PROFIL_TOOLS_OUTSIDE_RUN_H
#define PROFIL_TOOLS_OUTSIDE_RUN_H

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "interval_clock.h"
#include "outside/sampler.h"
#include "run_convert.h"

namespace profiling::cli {

// The clocks the outside source samples on: perf (auto's choice there)
// and wall (outside::SamplerOptions::wall).
inline bool is_outside_clock(const std::string& clock) { return clock == "auto" || clock == "perf" || clock == "wall"; }

// The wall clock's threads whose blocked time could not be sampled
// (outside::Sampler::threads_unreadable), one line when there are any.
void print_unreadable_threads(size_t threads);
// The sampler's own lines, once it has stopped (outside::Sampler::notes):
// the kernel's throttling, threads the descriptor limit left unsampled, a
// reader that could not run before the program's threads (issue 32).
void print_source_notes(const std::vector<std::string>& notes);

struct OutsideRunOptions {
  unsigned hz = 500;
  bool stacks = true;
  bool wall = false;  // the wall clock (outside::SamplerOptions::wall)
  bool interpreter_frames = true;  // outside::SamplerOptions::interpreter_frames
  bool interpreter_frames_at_sample = true;  // ...interpreter_frames_at_sample (--no-bpf: false)
  bool kernel_frames = true;                 // outside::SamplerOptions::kernel_frames (--no-kernel: false)
  // --event (issue 33): each event sampled by a sampler of its own (its own
  // events and rings, following the tree by its own records), each
  // process's profile of an event other than task-clock in a file of its
  // own, <stem>.<event>.pb.gz; none: task-clock alone, as before.
  std::vector<outside::Event> events;
  double duration_s = 0;  // 0: until finish()
  double every_s = 0;     // 0: no snapshots
  std::filesystem::path dir;
  ConvertOptions convert;
  // With snapshots: the summaries of processes that ended in an earlier
  // snapshot folded (fold_ended), for hours attached to a server whose
  // workers come and go (issue 32); not with -v, which lists each.
  bool fold_ended = false;
};

class OutsideRun {
 public:
  explicit OutsideRun(const OutsideRunOptions& options);
  ~OutsideRun();

  // outside::Sampler's, then the clock starts. "" or why not.
  std::string open_before_exec(pid_t pid);
  std::string attach(pid_t pid);
  std::string attach_all();
  void start();

  // Has --duration ended the sampling?
  bool duration_over() const;
  // Ends sampling (if the duration has not), writes what is left; the
  // conversion of every file written (snapshots included).
  Conversion finish();
  // profil run --no-wait, once the program has ended: what ended is written
  // here, and what it left running goes on being sampled by a copy of this
  // process (forked once the tool is down to one thread), detached from the
  // terminal and the caller's pipes, which writes their profiles once they
  // have all ended or at a SIGINT, SIGTERM or SIGHUP. Returns the conversion
  // of what ended, and in *left the processes sampled on (none: finish()).
  // The copy never returns.
  Conversion finish_leaving_running(std::vector<pid_t>* left);
  // profil top (issue 33): the profiles since the last take, for a live
  // view. keep (top -o): finish() writes them too, each image's takes
  // summed into its one file (top_takes.h). From the thread that calls
  // finish(), without --every or --duration (their clock writes too).
  std::vector<outside::ImageProfile> take_live(bool keep);
  // Summed over the events' samplers.
  uint64_t samples() const;
  uint64_t lost() const;
  bool samples_kernel() const { return sampler().samples_kernel(); }
  size_t threads_unreadable() const { return sampler().threads_unreadable(); }
  // One line on how the samples got their Python frames, when any did:
  // read at the sample (BPF) or after the fact, and how many did not fit
  // their native stack (outside/python_frames.h).
  void print_python_reads() const;
  std::vector<std::string> notes() const;

 private:
  struct EventSampler {
    outside::Event event;
    std::unique_ptr<outside::Sampler> sampler;
  };
  // The first event's (the only one with the wall clock or profil top).
  outside::Sampler& sampler() const { return *samplers_.front().sampler; }
  void start_clock();
  void stop_sampling();
  void write(bool final);
  void write_images(std::vector<outside::ImageProfile> images, const outside::Event& event);
  outside::ImageProfile empty_image(const outside::Event& event) const;
  [[noreturn]] void sample_until_ended(int mapped);

  OutsideRunOptions options_;
  std::vector<EventSampler> samplers_;  // one per event, in the order given
  IntervalClock clock_;  // --every, --duration
  mutable std::mutex lock_;  // sampling_over_
  std::chrono::steady_clock::time_point started_;
  bool sampling_over_ = false;
  unsigned snapshot_ = 0;
  // The process given (attach, open_before_exec): the one whose file an
  // empty window writes; 0 with --all.
  int64_t root_pid_ = 0;
  std::map<std::pair<int64_t, int>, std::string> stems_;  // (pid, generation) -> file stem
  std::set<std::string> used_stems_;
  Conversion conversion_;
  std::vector<outside::ImageProfile> taken_live_;  // take_live(keep), until written
  // --every: one set of sinks for every snapshot (run_convert.h), its
  // symbolizer renewed after each minute of windows (outside_run_write.cc).
  std::unique_ptr<ProfileSinks> snapshot_sinks_;
  unsigned symbolizer_windows_ = 0;
};

}  // namespace profiling::cli

#endif  // PROFIL_TOOLS_OUTSIDE_RUN_H
