// The outside sampler's perf source (source.h): the kernel copies each
// sample's user registers and the top of its stack into a ring buffer per
// CPU that profil maps; its reader thread reads the rings, follows the
// tree's execs, forks, mappings and exits from the same rings' records
// (MMAP2, COMM, FORK, EXIT) and hands each sample to the process table,
// which unwinds it at once. perf record and samply work this way; samply
// also unwinds while it records instead of writing the stack copies to
// disk.
//
// Launching and attaching differ only in how the events are opened
// (perf_source_open.cc): where the kernel allows it, both open one event
// per CPU and keep the records of the program's process tree; else before
// the program's exec (disabled, enabled by the exec, inherited by every
// thread and child it creates) or on every thread of a running process
// (inherited by what it creates from then on).
//
// NOT async-signal-safe: host side. The reader thread and flush() read the
// rings under the feed's lock; the rest is the owner's.
#ifndef PROFIL_OUTSIDE_PERF_SOURCE_H
#define PROFIL_OUTSIDE_PERF_SOURCE_H

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "outside/lost_share.h"
#include "outside/options.h"
#include "outside/perf_records_apply.h"
#include "outside/reader_priority.h"
#include "outside/source.h"
#include "perf/event.h"
#include "perf/records.h"
#include "perf/ring.h"

namespace profiling::outside {

class PerfSource final : public Source {
 public:
  PerfSource(Feed feed, const SamplerOptions& options);
  ~PerfSource() override;

  // Per CPU where the kernel allows it, as attach() below, each record kept
  // for the launched child's tree, the child's own from its exec on (its
  // COMM record with PERF_RECORD_MISC_COMM_EXEC; before it the child runs
  // profil's code); enabled as the reader starts. Else one event per CPU
  // on the child, inherited by what it creates, enabled by its exec.
  std::string open_before_exec(pid_t pid) override;
  // Where the kernel allows whole-CPU events (root, CAP_PERFMON,
  // perf_event_paranoid <= 0): one event per CPU, each sample and task
  // record kept only for the process and what it forks from then on (the
  // tree followed by FORK records). Else one event per thread and CPU, the
  // threads listed until no new one appears. Opened disabled by a thread of
  // raised priority (reader_priority.h), enabled by the reader as it
  // starts. A thread whose events would pass the descriptor limit is left
  // unsampled and counted.
  //
  // Why per CPU first (issue 32): a thread's event on one CPU keeps its
  // own period, so each thread's time since its last sample there is never
  // sampled, up to a period per thread and CPU; an event opened starts a
  // whole period away. Among 1,000 busy threads on 2 CPUs a 2-second
  // attach at 1 kHz gave each event about 1 ms of CPU: 67 samples for
  // some 3.8 s of CPU, and 10,000 threads would give each less than a
  // period. One event per CPU carries its period across the threads it
  // runs (perf record -a's way), and opens 2 descriptors, not 20,000.
  std::string attach(pid_t pid) override;
  // One event per CPU for every task (pid -1), each the owner of its CPU's
  // ring: root or CAP_PERFMON (perf record -a's).
  std::string attach_all() override;
  // The reader starts (first raising its priority).
  void start() override;
  void pause() override;
  // The events disabled before the last read: nothing is written after it.
  void stop() override;
  // Sampling ends at this CLOCK_MONOTONIC time (ns; 0: at stop()): the
  // reader itself disables, reads and closes the events then, at its
  // priority (issue 32: ended by the run's clock thread, which among 1,000
  // busy threads woke 2 s late even at nice -20, a 2-second attach sampled
  // for 4). Before or after start(): an attach's is set once start() has
  // returned, its events enabled (issue 32: set before, it counted the
  // seconds the reader took to be scheduled and to enable 2,000 events
  // among 1,000 busy threads; a 2-second attach sampled 0.2 s, or nothing).
  void end_at(uint64_t monotonic_ns) { end_at_ns_.store(monotonic_ns); }
  void flush() override { read_round(); }
  // The rings unmapped and the events closed without disabling them (they
  // are the copy's too).
  void abandon() override;
  // The kernel does not copy a perf ring's mapping into a forked process
  // (VM_DONTCOPY), so each ring is mapped again from its event — the same
  // buffer, head and tail, while the tool's mapping still keeps it (a ring
  // unmapped by all is freed with what it holds).
  std::string resume_in_copy() override;

  // Kernel time is sampled too (allowed here): known once the events are
  // open.
  bool samples_kernel() const { return !user_only_; }
  uint64_t throttled() const { return throttled_.load(); }
  // The BPF program runs at each sample of every event open so far, and of
  // those opened later; false where refused (python_reads_refused says why).
  // Under the table's lock (the events are all opened before the reader).
  bool attach_python_reads(PythonStackReads* at_sample);
  // Why the kernel refused the BPF program on an event ("" if it did not).
  const std::string& python_reads_refused() const { return python_reads_refused_; }
  unsigned rings() const { return static_cast<unsigned>(rings_.size()); }
  // After stop(), one line each (without "profil: "): the kernel's
  // throttling, per-thread events where per-CPU ones were refused, threads
  // the descriptor limit left without events, and, when a full ring lost
  // samples, a reader that could not run before the program's threads.
  std::vector<std::string> notes() const;

 private:
  struct Ring {
    int cpu;
    int fd;  // the event that owns the mapping
    void* mapping;
    size_t bytes;
    perf::RingReader reader;
    LostShare lost_share;  // what its lost records stand for
  };
  std::string open_on(pid_t tid, bool before_exec);
  void attach_python_reads(int fd);
  std::string open_on_threads(pid_t pid);
  std::string open_per_cpu_for(pid_t pid);
  // Per-CPU events: whether a task record of this pid, at this time, is the
  // tree's (a FORK from one of it adds its child); a sample.
  bool kept(const perf::Record& r, uint32_t pid, uint64_t time);
  bool sample_kept(const perf::SampleId& who) const;
  void read_round();
  void reader_loop();
  void close_rings();
  void disable_read_close();

  Feed feed_;
  SamplerOptions options_;  // its ring_pages halved where the kernel refuses more
  unsigned ring_pages_said_ = options_.ring_pages;  // the size the last line about smaller rings named
  std::vector<int> cpus_;
  bool user_only_ = false;
  int last_open_error_ = 0;  // open_on's errno when perf_event_open refused
  perf::RecordFormat format_;
  std::vector<Ring> rings_;
  std::vector<int> fds_;  // every event, the rings' owners included
  std::vector<uint8_t> scratch_;
  std::atomic<uint64_t> throttled_{0};
  std::string python_reads_refused_;
  bool stopped_ = false;
  bool whole_machine_ = false;  // attach_all, or per-CPU events of a tree: nothing inherited
  // Per-CPU events of a run or an attach: the processes whose records are
  // kept (the one launched or attached and what it forked since); empty:
  // every record.
  std::unordered_set<uint32_t> tree_;
  bool per_task_events_ = false;  // per-CPU events refused (a rung of issue 32's ladder)
  uint64_t others_samples_ = 0;  // per-CPU events' samples of other processes, dropped
  // A launch on per-CPU events: the child, and the time of its exec (0:
  // not yet; its records until then are not its program's).
  uint32_t launched_ = 0;
  uint64_t launched_exec_ns_ = 0;
  // Attached: the events wait, disabled, for the reader's start.
  bool enable_at_start_ = false;
  // Set by the reader once the events are on: start() waits for it, so that
  // "attached" is said of sampled events (run_attach_all: a program started
  // after the line, 1 s of CPU on a loaded machine, was never sampled).
  std::atomic<bool> reader_started_{false};
  // stop() while the reader runs: it disables, reads and closes the events
  // itself, at its priority.
  std::atomic<bool> close_in_reader_{false};
  std::atomic<uint64_t> end_at_ns_{0};  // end_at
  ThreadPriority priority_;  // the reader's (or the opening thread's)
  size_t threads_without_events_ = 0, threads_seen_ = 0;
  std::string descriptor_limit_;  // why the limit could not be raised
  SourceThread reader_;
};

}  // namespace profiling::outside

#endif  // PROFIL_OUTSIDE_PERF_SOURCE_H
