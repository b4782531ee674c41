#include "interval_clock.h"

#include "outside/reader_priority.h"

#include <algorithm>

namespace profiling::cli {

void IntervalClock::start(clock::time_point from, double every_s, double end_s, std::function<void()> on_tick,
                          std::function<void()> on_end) {
  stop();
  if (every_s <= 0 && end_s <= 0) return;
  on_tick_ = std::move(on_tick);
  on_end_ = std::move(on_end);
  {
    std::lock_guard<std::mutex> hold(lock_);
    stopping_ = false;
  }
  thread_ = std::thread([this, from, every_s, end_s] { loop(from, every_s, end_s); });
  // Real time until its first instruction, which lowers it to nice -20
  // (created at nice 0 by a thread with SCHED_RESET_ON_FORK, it waited
  // seconds for that instruction among 1,000 busy threads).
  (void)outside::raise_new_thread(thread_.native_handle());
}

void IntervalClock::stop() {
  {
    std::lock_guard<std::mutex> hold(lock_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void IntervalClock::loop(clock::time_point from, double every_s, double end_s) {
  // Woken at its time, and converting at once, among a program's busy
  // threads: at their priority, one of 200 woke 2.3 s late and one of
  // 1,000 86 s late (issue 32; reader_priority.h).
  (void)outside::lower_own_nice();
  const auto seconds = [](double s) { return std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(s)); };
  auto next_tick = every_s > 0 ? from + seconds(every_s) : clock::time_point::max();
  if (every_s > 0)
    while (next_tick <= clock::now()) next_tick += seconds(every_s);
  const auto end_at = end_s > 0 ? from + seconds(end_s) : clock::time_point::max();
  std::unique_lock<std::mutex> hold(lock_);
  while (!stopping_) {
    const auto until = std::min(next_tick, end_at);
    if (wake_.wait_until(hold, until, [this] { return stopping_; })) break;
    const auto now = clock::now();
    if (now >= end_at) {
      hold.unlock();
      if (on_end_) on_end_();
      return;
    }
    if (now >= next_tick) {
      hold.unlock();
      on_tick_();
      hold.lock();
      next_tick += seconds(every_s);
    }
  }
}

}  // namespace profiling::cli
