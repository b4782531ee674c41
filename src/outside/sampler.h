// Sampling a process tree from outside (issue 21): the sources of samples
// (source.h) — the perf rings always (perf_source.h: CPU time, and the
// tree's execs, forks, mappings and exits), the wall clock's poller when
// asked (wall_poller.h: blocked threads) — feeding one process table, which
// unwinds each sample at once (process_table.h). Nothing enters the
// profiled program: no library, no signal, no descriptor, no thread, no
// system call it makes differently.
//
// NOT async-signal-safe: host side. take() and the counters may be called
// from any thread (the sampler's lock); the rest from the owner's.
#ifndef PROFIL_OUTSIDE_SAMPLER_H
#define PROFIL_OUTSIDE_SAMPLER_H

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "outside/options.h"
#include "outside/process_table.h"
#include "outside/source.h"

namespace profiling::outside {

class PerfSource;
class WallPoller;

class Sampler {
 public:
  explicit Sampler(SamplerOptions options);
  ~Sampler();
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  // Another source (a test's), before start(): it feeds feed().
  void add(std::unique_ptr<Source> source);
  Feed feed() { return Feed{*table_, lock_}; }

  // pid is a child that has not exec'd yet: events on it, counting from
  // its exec on. "" or why not, one line naming the setting at fault.
  std::string open_before_exec(pid_t pid);
  // pid runs: events on each of its threads (listed until no new one
  // appears), its mappings read from /proc. "" or why not.
  std::string attach(pid_t pid);
  // Every process of the machine (profil attach --all): per-CPU events,
  // every running process's mappings read from /proc, those started later
  // followed by their records. "" or why not.
  std::string attach_all();

  // The sources' threads (the rings' reader, the wall clock's poller).
  void start();
  // The perf events end at this CLOCK_MONOTONIC time (ns), by the reader's
  // own hand (PerfSource::end_at); stop() still joins. Before or after
  // start().
  void end_at(uint64_t monotonic_ns);
  // Reads what is left, closes the events (sampling ends: the program runs
  // on unprofiled), joins the threads. Idempotent. The sources stop in the
  // reverse of their order: a later one may flush an earlier one.
  void stop();

  // The threads stop after a last read; the events go on counting into the
  // rings (sized for a reader scheduled late) until start() again. With the
  // clock thread of outside_run.h joined too, the tool has one thread and
  // may fork (profil run --no-wait).
  void pause();
  // In the process that leaves the sampling to a forked copy of itself:
  // the rings unmapped and the events closed without disabling them (they
  // are the copy's too). Nothing is read here after this.
  void abandon();
  // In that copy, first: each ring mapped again from its event
  // (PerfSource::resume_in_copy). "" or why not.
  std::string map_rings_again();

  // The profiles gathered since the last take (process_table.h).
  std::vector<ImageProfile> take(bool final);
  // Those of the images that ended, and the processes still running.
  std::vector<ImageProfile> take_ended();
  std::vector<pid_t> running() const;

  // Kernel time is sampled too (allowed here): its samples sit under a
  // "[kernel]" frame on the user stack that made the system call.
  bool samples_kernel() const;
  uint64_t samples() const;
  // The wall clock's threads whose /proc syscall file profil may not read
  // (WallPoller::threads_unreadable); 0 without the wall clock.
  size_t threads_unreadable() const;
  uint64_t lost() const;
  uint64_t throttled() const;
  unsigned rings() const;
  // How the samples got their Python frames so far, and why none was read
  // at the sample where the BPF program was asked for and refused ("").
  PythonReads python_reads() const;
  std::string python_reads_refused() const;
  // How the samples got their Ruby frames (ruby_frames.h).
  RubyReads ruby_reads() const;
  // After stop(): the perf source's lines for the run's summary
  // (PerfSource::notes: throttling, the descriptor limit, the reader's
  // priority).
  std::vector<std::string> notes() const;

 private:
  // Every source's records up to this moment read into the table; the
  // moment (CLOCK_MONOTONIC ns), taken before the read.
  uint64_t read_up_to_now();
  // The BPF program that reads interpreter frames at the sample, loaded and
  // attached to every event (nullptr where refused: python_reads_refused
  // says why). Under the table's lock: the table asks as it finds the first
  // interpreter process.
  PythonStackReads* load_python_reads();

  SamplerOptions options_;
  mutable FeedLock lock_;  // the table's
  // Before the table: the table's images use it until they are freed.
  // Loaded at the first interpreter process (load_python_reads).
  std::unique_ptr<PythonStackReads> python_at_sample_;
  std::string python_at_sample_refused_;
  std::unique_ptr<ProcessTable> table_;
  std::vector<std::unique_ptr<Source>> sources_;  // in the order they start
  PerfSource* perf_ = nullptr;     // sources_[0]
  WallPoller* poller_ = nullptr;  // with the wall clock
  bool stopped_ = false;
};

}  // namespace profiling::outside

#endif  // PROFIL_OUTSIDE_SAMPLER_H
