// Opening the events (perf_source.h), a launch's and an attach's: per
// CPU, keeping the program's process tree, where the kernel allows it;
// else per task (a launch: inherited from the child; an attach: per thread
// and CPU). Split from perf_source.cc (the rings and their reader) to keep
// each room under 500 lines (issue 32).
#include "outside/perf_source.h"

#include "outside/descriptor_limit.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <thread>

namespace profiling::outside {

std::string PerfSource::open_before_exec(pid_t pid) {
  // Per CPU first, as an attach (perf_source.h: with 1,000 busy threads at
  // 1 kHz the per-task events, one period per thread and CPU, sampled
  // 88.9 % of their CPU time; 2,000 at 10 kHz, 38.4 %). The child's records
  // count from its exec on (kept()): before it, the events are on and it
  // runs profil's code.
  if (open_per_cpu_for(pid).empty()) {
    launched_ = static_cast<uint32_t>(pid);
    launched_exec_ns_ = 0;
    return "";
  }
  return open_on(pid, true);
}

std::string PerfSource::attach(pid_t pid) {
  if (::kill(pid, 0) != 0 && errno == ESRCH) return "no process " + std::to_string(pid);
  // Opened from a thread that runs before the program's (issue 32: among
  // 1,000 busy threads the tool's own thread took 19 s to open 2,000
  // events, while the first ones' samples filled the rings unread).
  std::string why;
  std::thread opener([&] {
    priority_ = raise_thread_priority();
    why = open_per_cpu_for(pid);
    if (!why.empty()) why = open_on_threads(pid);
  });
  (void)raise_new_thread(opener.native_handle());
  opener.join();
  return why;
}

std::string PerfSource::open_per_cpu_for(pid_t pid) {
  // Refused (not root, no CAP_PERFMON, perf_event_paranoid above 0): the
  // events per thread, as an unprivileged user may open them.
  whole_machine_ = true;
  tree_ = {static_cast<uint32_t>(pid)};
  std::string why = open_on(-1, false);
  if (why.empty() && ::kill(pid, 0) != 0 && errno == ESRCH) why = "no process " + std::to_string(pid);
  if (!why.empty()) {
    if (last_open_error_ == EACCES || last_open_error_ == EPERM) per_task_events_ = true;  // said by notes()
    close_rings();
    whole_machine_ = false;
    tree_.clear();
    user_only_ = false;
    last_open_error_ = 0;
    return why;
  }
  enable_at_start_ = true;
  return "";
}

bool PerfSource::kept(const perf::Record& r, uint32_t pid, uint64_t time) {
  if (tree_.empty()) return true;
  if (pid == launched_ && launched_exec_ns_ == 0) {
    // A launch on per-CPU events: the launched child's records are its
    // program's from the COMM its exec writes (after the kernel's
    // perf_event_exec, where a task's enable_on_exec event starts) on;
    // before it the child is profil's fork, waiting to exec.
    if (r.header.type != PERF_RECORD_COMM || (r.header.misc & PERF_RECORD_MISC_COMM_EXEC) == 0) return false;
    launched_exec_ns_ = std::max<uint64_t>(time, 1);
    return true;
  }
  if (r.header.type == PERF_RECORD_FORK) {
    perf::Task t;
    if (!perf::parse_task(format_, r, &t)) return false;
    if (tree_.contains(t.ppid))
      tree_.insert(t.pid);
    else if (t.pid == t.tid)
      tree_.erase(t.pid);  // a process of the tree ended and its pid went to another's child (pid_max wraps)
    return tree_.contains(t.pid);
  }
  if (r.header.type == PERF_RECORD_EXIT) {
    perf::Task t;
    return perf::parse_task(format_, r, &t) && tree_.contains(t.pid);
  }
  return tree_.contains(pid);
}

bool PerfSource::sample_kept(const perf::SampleId& who) const {
  if (tree_.empty()) return true;
  if (!tree_.contains(who.pid)) return false;
  return who.pid != launched_ || (launched_exec_ns_ != 0 && who.time >= launched_exec_ns_);
}

std::string PerfSource::open_on_threads(pid_t pid) {
  // One event per thread and CPU (descriptor_limit.h).
  descriptor_limit_ = raise_descriptor_limit(threads_of(pid).size() * cpus_.size() + 64);
  std::set<pid_t> opened;
  // Threads created while the events are being opened carry the events of
  // their creator once it has them; the list is read again until it holds
  // no thread without events.
  for (int round = 0; round < 100; ++round) {
    const std::set<pid_t> tids = threads_of(pid);
    if (tids.empty()) return "no process " + std::to_string(pid);
    bool added = false;
    for (pid_t tid : tids) {
      if (opened.count(tid)) continue;
      last_open_error_ = 0;
      const size_t fds_before = fds_.size();
      std::string why = open_on(tid, false);
      if (!why.empty()) {
        // A thread that ended since the list was read (issue 32: "no
        // process TID" ended 11 of 46 attaches to a thread pool that grows
        // and shrinks; kill(tid, 0) still answers for a thread not yet
        // reaped): skipped, the first thread too. Its events on the CPUs
        // it was opened on before count nothing more.
        if (last_open_error_ == ESRCH) {
          opened.insert(tid);
          continue;
        }
        // Out of descriptors once the rings are mapped: this thread is left
        // unsampled (its events on some CPUs closed: none rather than a
        // share of its time), counted and said (notes()).
        if ((last_open_error_ == EMFILE || last_open_error_ == ENFILE) && fds_before >= cpus_.size()) {
          for (size_t k = fds_before; k < fds_.size(); ++k) ::close(fds_[k]);
          fds_.resize(fds_before);
          ++threads_without_events_;
          opened.insert(tid);
          continue;
        }
        return why;
      }
      opened.insert(tid);
      added = true;
    }
    if (!added) break;
  }
  threads_seen_ = opened.size();
  // Every thread ended before its events opened: so did the process.
  if (rings_.empty()) return "no process " + std::to_string(pid);
  enable_at_start_ = true;
  return "";
}

std::string PerfSource::attach_all() {
  whole_machine_ = true;
  std::string why = open_on(-1, false);
  if (why.find("perf events on pid -1") != std::string::npos || last_open_error_ == EACCES || last_open_error_ == EPERM)
    why = "the kernel refuses whole-machine perf events (" + std::string(std::strerror(last_open_error_)) +
          "): they need root or CAP_PERFMON (or kernel.perf_event_paranoid at most 0)";
  if (why.empty()) enable_at_start_ = true;  // opened disabled, as an attach's
  return why;
}

bool PerfSource::attach_python_reads(PythonStackReads* at_sample) {
  for (int fd : fds_)
    if (!at_sample->attach(fd, &python_reads_refused_)) return false;
  return true;
}

void PerfSource::attach_python_reads(int fd) {
  PythonStackReads* at_sample = feed_.table.python_reads().at_sample;
  if (at_sample == nullptr || at_sample->attach(fd, &python_reads_refused_)) return;
  // Refused on this event: the frames are read after the fact, for every
  // event alike (a sample without its record would be read so anyway).
  feed_.table.set_python_reads(nullptr);
}

}  // namespace profiling::outside
