// The CPU time of the sampled threads that their samples did not take: per
// thread, the periods its samples (and lost records) took, over all its
// process's images, and, once it has ended, its events' counts (one READ
// per CPU's event, inherit_stat). What a thread ran beyond its samples
// (the part of a period it ended within, or, where kernel mode is not
// sampled, mostly its time in the kernel) is said as its image's unsampled
// time (ProcessTable::take).
//
// NOT async-signal-safe, not thread-safe: the process table's (under the
// sampler's lock).
#ifndef PROFIL_OUTSIDE_THREAD_TIME_H
#define PROFIL_OUTSIDE_THREAD_TIME_H

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <unordered_map>

#include "perf/records.h"

namespace profiling::outside {

class ThreadTimes {
 public:
  // A CPU sample of the thread's, or lost records standing for `periods`.
  void sampled(uint32_t tid, uint64_t periods) { threads_[tid].periods += periods; }
  // An ended thread's count on one CPU's event.
  void on_read(const perf::Read& r);
  // Its EXIT record: a thread with no READ by the settle after the next
  // is forgotten — an attach's per-CPU events inherit nothing and send no
  // READ, and every sampled thread of a server that starts and ends them
  // all the time stayed here for the whole attach (issue 32).
  void exited(uint32_t tid);
  // The threads it holds (its memory, flat over hours of churn).
  size_t threads() const { return threads_.size(); }
  // Every ended thread, forgotten: `ended` is called for each, with the
  // time its count has beyond its samples' periods (0 when none).
  // Settled at a take, not at the READ: a READ is read before the samples
  // of its round (PerfSource's read_round), which a settlement at once
  // would miss.
  void settle(uint64_t period_ns,
              const std::function<void(pid_t pid, uint64_t exit_time, uint32_t tid, uint64_t unsampled_ns)>& ended);

 private:
  struct ThreadTime {
    uint64_t periods = 0;
    uint64_t read_ns = 0;
    pid_t pid = 0;
    uint64_t exit_time = 0;
    bool ended = false;
    uint8_t exited = 0;  // 1: its EXIT seen; 2: and a settle since
  };
  std::unordered_map<uint32_t, ThreadTime> threads_;
};

}  // namespace profiling::outside

#endif  // PROFIL_OUTSIDE_THREAD_TIME_H
