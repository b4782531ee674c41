#include "outside/thread_time.h"

#include <algorithm>

namespace profiling::outside {

void ThreadTimes::on_read(const perf::Read& r) {
  ThreadTime& thread = threads_[r.tid];
  thread.read_ns += r.value;
  thread.pid = static_cast<pid_t>(r.pid);
  thread.exit_time = std::max(thread.exit_time, r.who.time);
  thread.ended = true;
}

// Marked even when no sample came yet: a round applies its task records
// before its samples (PerfSource::read_round), so a thread's last samples
// often come after its EXIT.
void ThreadTimes::exited(uint32_t tid) { threads_[tid].exited = 1; }

void ThreadTimes::settle(
    uint64_t period_ns,
    const std::function<void(pid_t pid, uint64_t exit_time, uint32_t tid, uint64_t unsampled_ns)>& ended) {
  for (auto it = threads_.begin(); it != threads_.end();) {
    ThreadTime& thread = it->second;
    if (!thread.ended && thread.exited == 2) {
      it = threads_.erase(it);  // ended without a count: nothing to settle
      continue;
    }
    if (!thread.ended) {
      if (thread.exited) thread.exited = 2;
      ++it;
      continue;
    }
    const uint64_t sampled = thread.periods * period_ns;
    ended(thread.pid, thread.exit_time, it->first, thread.read_ns > sampled ? thread.read_ns - sampled : 0);
    it = threads_.erase(it);
  }
}

}  // namespace profiling::outside
