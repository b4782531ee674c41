// The clock of a run's "every T" and "for D" (--every, --duration): a
// thread that calls on_tick every interval from a start, and on_end once
// when the duration is over (then it ends). Both snapshot sources have one:
// inside (inside_snapshots.h: a request to the processes) and outside
// (outside_run.h: a take of the sampler's profiles, and the end of
// sampling).
//
// NOT async-signal-safe: host side. start() and stop() from the owner's
// thread; the callbacks run on the clock's own, outside its lock.
#ifndef PROFIL_TOOLS_INTERVAL_CLOCK_H
#define PROFIL_TOOLS_INTERVAL_CLOCK_H

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace profiling::cli {

class IntervalClock {
 public:
  using clock = std::chrono::steady_clock;
  IntervalClock() = default;
  ~IntervalClock() { stop(); }
  IntervalClock(const IntervalClock&) = delete;
  IntervalClock& operator=(const IntervalClock&) = delete;

  // Ticks at from + every, + 2 every, ... (the first still to come when
  // `from` is past: a forked copy that samples on keeps the run's clock);
  // the end at from + end. 0 s: no ticks, or no end; neither: no thread.
  void start(clock::time_point from, double every_s, double end_s, std::function<void()> on_tick,
             std::function<void()> on_end = {});
  // Ends the thread (a wait at once, a tick under way once it returns) and
  // joins it. Idempotent; start() may follow.
  void stop();

 private:
  void loop(clock::time_point from, double every_s, double end_s);

  std::function<void()> on_tick_, on_end_;
  std::mutex lock_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace profiling::cli

#endif  // PROFIL_TOOLS_INTERVAL_CLOCK_H
