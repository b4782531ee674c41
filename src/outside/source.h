// One source of the outside sampler's samples (sampler.h), behind one
// small interface, as async-profiler's engines are: the perf rings
// (perf_source.h: CPU time, and the tree's execs, forks, mappings and exits)
// and the wall clock's poller (wall_poller.h: blocked threads). Each feeds
// the one process table, which unwinds and counts what it is given
// (process_table.h); the Sampler composes the sources it is asked for. A new
// source is one new file: a Source that calls the table's on_sample (and,
// for what it learns of the processes, add_running or on_mmap and the
// like) under the feed's lock. source_test.cc shows one.
//
// NOT async-signal-safe: host side. The table is the feed's lock's; a
// source's own thread takes it for each thing it feeds. The Source methods
// are called from the sampler's owner, one at a time.
#ifndef PROFIL_OUTSIDE_SOURCE_H
#define PROFIL_OUTSIDE_SOURCE_H

#include <pthread.h>
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "outside/process_table.h"

namespace profiling::outside {

// The table's lock, priority-inheriting (PTHREAD_PRIO_INHERIT): the
// reader runs before the program's threads (reader_priority.h), the
// snapshots' clock thread at their priority; a reader waiting for a lock
// that thread holds lends it its priority (issue 32: among thousands of
// busy threads a snapshot's take() held the lock for seconds while the
// waiting reader's rings filled: 36.6 s of CPU lost in 4 minutes).
class FeedLock {
 public:
  FeedLock();
  ~FeedLock();
  FeedLock(const FeedLock&) = delete;
  FeedLock& operator=(const FeedLock&) = delete;
  void lock() { ::pthread_mutex_lock(&mutex_); }
  void unlock() { ::pthread_mutex_unlock(&mutex_); }

 private:
  pthread_mutex_t mutex_;
};

// What every source feeds: the process table, under the lock that the
// sampler's take() and counters take too.
struct Feed {
  ProcessTable& table;
  FeedLock& lock;
};

class Source {
 public:
  virtual ~Source() = default;

  // The launched child before its exec, or every thread of a running
  // process: "" or why not, one line naming the setting at fault. A source
  // that needs nothing opened on the process (the poller reads /proc) has
  // nothing to refuse.
  virtual std::string open_before_exec(pid_t) { return ""; }
  virtual std::string attach(pid_t) { return ""; }
  // Every process of the machine, those started from now on too (issue 33,
  // profil attach --all): "" or why not. A source that cannot refuses.
  virtual std::string attach_all() { return "this source cannot sample the whole machine"; }

  // Its thread starts feeding the table.
  virtual void start() = 0;
  // Its thread stops, after a last read of what it holds; what the kernel
  // gathers for it goes on being gathered until start() again.
  virtual void pause() = 0;
  // Sampling ends: a last read, then nothing more. Idempotent.
  virtual void stop() = 0;
  // What it holds now, into the table (under the feed's lock): called by
  // another source whose samples want the table up to date (the poller's
  // blocked threads are unwound with the mappings the rings announce).
  virtual void flush() {}

  // The handoff to a forked copy of the tool (Sampler::abandon): here its
  // thread ends and it lets go of its kernel buffers, without a last read
  // (the copy reads on); in the copy, first, what the kernel did not copy
  // is taken again (Sampler::map_rings_again). "" or why not.
  virtual void abandon() {}
  virtual std::string resume_in_copy() { return ""; }
};

// CLOCK_MONOTONIC in ns: the clock of the perf events' timestamps
// (use_clockid), so every source's samples and the table's windows are on
// one clock.
uint64_t monotonic_ns();

// The threads of a process (/proc/PID/task): none when it has ended.
std::set<pid_t> threads_of(pid_t pid);

// A source's thread, with the pipe that ends its waits early: its loop polls
// wake_fd() beside what it waits for, until stopping().
class SourceThread {
 public:
  SourceThread();
  ~SourceThread();
  SourceThread(const SourceThread&) = delete;
  SourceThread& operator=(const SourceThread&) = delete;

  void start(std::function<void()> loop);
  bool stopping() const { return stopping_.load(); }
  // Started and not yet joined (the owner's question).
  bool running() const { return thread_.joinable(); }
  int wake_fd() const { return wake_[0]; }
  // The running thread's pthread_t (reader_priority.h's raise_new_thread).
  unsigned long native_handle() { return thread_.native_handle(); }
  // Asks the loop to end, wakes it and joins it; the pipe is drained for
  // the next start.
  void stop();
  // Asks the loop to end and joins it, without writing the pipe: after a
  // fork the copy's thread polls the same pipe, and a byte left there would
  // wake it at every poll (Sampler::abandon).
  void stop_quietly();

 private:
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  int wake_[2] = {-1, -1};
};

}  // namespace profiling::outside

#endif  // PROFIL_OUTSIDE_SOURCE_H
