// The outside's wall clock (source.h): a thread of profil that looks at
// every thread of the tree once a period and samples those that are
// blocked (where the program waits): pc and sp from their /proc syscall
// files (base/proc_syscall.h), the stack by process_vm_readv(2), unwound by
// the process table like a perf sample of `periods` periods. Nothing enters
// the program, as with the perf clock (the inside's watcher is a thread in
// it: sampler/wall_sampler.h).
//
// NOT async-signal-safe: host side. Its thread feeds the table under the
// feed's lock; the set of unreadable threads is under that lock too.
#ifndef PROFIL_OUTSIDE_WALL_POLLER_H
#define PROFIL_OUTSIDE_WALL_POLLER_H

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <set>
#include <unordered_set>
#include <vector>

#include "outside/options.h"
#include "outside/source.h"

namespace profiling::outside {

class WallPoller final : public Source {
 public:
  // before_look: what the other sources hold, into the table, before each
  // look (a process's exec and mappings are then known before its blocked
  // threads are unwound with them).
  WallPoller(Feed feed, const SamplerOptions& options, std::function<void()> before_look);
  ~WallPoller() override;

  void start() override;
  void pause() override { thread_.stop(); }
  void stop() override { thread_.stop(); }
  void abandon() override { thread_.stop_quietly(); }

  // The threads whose /proc syscall file profil may not read (a process
  // that made itself non-dumpable, a set-ID one, without the privilege to
  // trace it): their blocked time is not sampled.
  size_t threads_unreadable() const;

 private:
  void loop();
  void sample_blocked_threads(uint64_t periods);

  Feed feed_;
  SamplerOptions options_;
  std::function<void()> before_look_;
  std::vector<uint8_t> stack_copy_;
  std::set<pid_t> unreadable_;  // under the feed's lock
  // The threads refused at this look and at the one before (the poller's own).
  std::unordered_set<pid_t> refused_now_, refused_before_;
  SourceThread thread_;
};

}  // namespace profiling::outside

#endif  // PROFIL_OUTSIDE_WALL_POLLER_H
