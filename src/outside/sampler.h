// Sampling a process tree from outside (issue 21): the kernel copies each
// sample's user registers and the top of its stack into a ring buffer per
// CPU that profil maps; a thread of profil reads the rings, follows the
// tree's execs, forks, mappings and exits from the same rings' records
// (MMAP2, COMM, FORK, EXIT), and unwinds each sample at once
// (process_table.h). Nothing enters the profiled program: no library, no
// signal, no descriptor, no thread, no system call it makes differently.
// perf record and samply work this way; samply also unwinds while it
// records instead of writing the stack copies to disk.
//
// Launching and attaching differ only in how the events are opened:
// before the program's exec (disabled, enabled by the exec, inherited by
// every thread and child it creates) or on every thread of a running
// process (inherited by what it creates from then on).
//
// NOT async-signal-safe: host side. take() and the counters may be called
// from any thread (the sampler's lock); the rest from the owner's.
#ifndef PROFIL_OUTSIDE_SAMPLER_H
#define PROFIL_OUTSIDE_SAMPLER_H

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <set>
#include <thread>
#include <vector>

#include "outside/process_table.h"
#include "perf/records.h"
#include "perf/ring.h"

namespace profiling::outside {

struct SamplerOptions {
  uint32_t hz = 500;
  // The stack each sample carries (up to 65528: a record's size is 16
  // bits); 0: 16 KiB up to 1 kHz, 8 KiB (perf record --call-graph dwarf's)
  // above, as the preload's ring takes.
  uint32_t stack_bytes = 0;
  uint32_t max_depth = 128;
  // false: the PC alone (--no-stacks): no registers or stack copied.
  bool stacks = true;
  // Data pages per CPU's ring (a power of two): 2 MiB, 128 records of 16
  // KiB, so that a reader thread that a busy machine schedules late loses
  // none (512 KiB lost 12 % of a 1 kHz run beside two compilers); halved
  // down to 64 KiB where the kernel's perf_event_mlock_kb refuses more.
  unsigned ring_pages = 512;
  // The wall clock: besides the CPU samples, a thread of profil looks at
  // every thread of the tree once a period and samples those that are
  // blocked (where the program waits), from their /proc syscall files, with
  // their stacks read by process_vm_readv(2). Nothing enters the program,
  // as with the perf clock (the inside's watcher is a thread in it).
  bool wall = false;
};

class Sampler {
 public:
  explicit Sampler(SamplerOptions options);
  ~Sampler();
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  // pid is a child that has not exec'd yet: events on it, counting from
  // its exec on. "" or why not, one line naming the setting at fault.
  std::string open_before_exec(pid_t pid);
  // pid runs: events on each of its threads (listed until no new one
  // appears), its mappings read from /proc. "" or why not.
  std::string attach(pid_t pid);

  // The reader thread (and the wall clock's poller).
  void start();
  // Reads what is left, closes the events (sampling ends: the program runs
  // on unprofiled), joins the reader. Idempotent.
  void stop();

  // The reader thread stops after a last read; the events go on counting
  // into the rings (sized for a reader scheduled late) until start() again.
  // With the clock thread of outside_run.h joined too, the tool has one
  // thread and may fork (profil run --no-wait).
  void pause();
  // In the process that leaves the sampling to a forked copy of itself:
  // the rings unmapped and the events closed without disabling them (they
  // are the copy's too). Nothing is read here after this.
  void abandon();
  // In that copy, first: the kernel does not copy a perf ring's mapping
  // into a forked process (VM_DONTCOPY), so each ring is mapped again from
  // its event — the same buffer, head and tail, while the tool's mapping
  // still keeps it (a ring unmapped by all is freed with what it holds).
  // "" or why not.
  std::string map_rings_again();

  // The profiles gathered since the last take (process_table.h).
  std::vector<ImageProfile> take(bool final);
  // Those of the images that ended, and the processes still running.
  std::vector<ImageProfile> take_ended();
  std::vector<pid_t> running() const;

  // Kernel time is sampled too (allowed here): its samples sit under a
  // "[kernel]" frame on the user stack that made the system call.
  bool samples_kernel() const { return !user_only_; }
  uint64_t samples() const;
  // The wall clock's threads whose /proc syscall file profil may not read
  // (a process that made itself non-dumpable, a set-ID one, without the
  // privilege to trace it): their blocked time is not sampled.
  size_t threads_unreadable() const;
  uint64_t lost() const;
  uint64_t throttled() const { return throttled_.load(); }
  unsigned rings() const { return static_cast<unsigned>(rings_.size()); }

 private:
  struct Ring {
    int cpu;
    int fd;  // the event that owns the mapping
    void* mapping;
    size_t bytes;
    perf::RingReader reader;
  };
  std::string open_on(pid_t tid, bool before_exec);
  std::string describe_refusal(long error, pid_t pid) const;
  void read_round();
  void reader_loop();
  void poller_loop();
  // The stack each sample carries (SamplerOptions::stack_bytes, or its
  // default for the rate).
  uint32_t stack_bytes() const {
    return options_.stack_bytes != 0 ? options_.stack_bytes : options_.hz > 1000 ? 8192 : 16384;
  }
  void sample_blocked_threads(uint64_t periods);
  static uint64_t now_ns();

  SamplerOptions options_;
  std::vector<int> cpus_;
  bool user_only_ = false;
  perf::RecordFormat format_;
  std::vector<Ring> rings_;
  std::vector<int> fds_;  // every event, the rings' owners included
  std::vector<uint8_t> scratch_;
  mutable std::mutex lock_;
  std::unique_ptr<ProcessTable> table_;
  std::thread reader_;
  std::thread poller_;  // the wall clock's
  std::vector<uint8_t> stack_copy_;  // the poller's
  std::set<pid_t> unreadable_;       // the poller's, under lock_
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> throttled_{0};
  bool stopped_ = false;
  int wake_[2] = {-1, -1};  // stop() wakes the reader's poll
};

}  // namespace profiling::outside

#endif  // PROFIL_OUTSIDE_SAMPLER_H
