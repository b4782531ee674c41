// The wall clock's poller (see wall_poller.h).
#include "outside/wall_poller.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <string>
#include <string_view>

#include "base/proc_syscall.h"
#include "base/unique_fd.h"
#include "perf/event.h"
#include "perf/records.h"

namespace profiling::outside {

WallPoller::WallPoller(Feed feed, const SamplerOptions& options, std::function<void()> before_look)
    : feed_(feed), options_(options), before_look_(std::move(before_look)) {}

WallPoller::~WallPoller() = default;

void WallPoller::start() {
  thread_.start([this] { loop(); });
}

size_t WallPoller::threads_unreadable() const {
  std::lock_guard<FeedLock> hold(feed_.lock);
  return unreadable_.size();
}

// Once a period, every thread of the tree that is blocked is one sample of
// the periods since the previous look (base::LookPeriods), as the inside's
// watcher does (sampler/wall_sampler.h). Its sleep ends early when stop()
// or pause() writes the wake pipe.
void WallPoller::loop() {
  const uint64_t period = options_.period_ns();
  uint64_t next = monotonic_ns();
  base::LookPeriods look(next);
  const int wake_fd = thread_.wake_fd();
  while (!thread_.stopping()) {
    next += period;
    const uint64_t now_before = monotonic_ns();
    if (next > now_before) {
      const uint64_t wait = next - now_before;
      const timespec timeout{static_cast<time_t>(wait / 1'000'000'000), static_cast<long>(wait % 1'000'000'000)};
      pollfd wake{wake_fd, POLLIN, 0};
      ::ppoll(&wake, wake_fd >= 0 ? 1 : 0, &timeout, nullptr);
    }
    if (thread_.stopping()) break;
    const uint64_t now = monotonic_ns();
    const int64_t periods = look.since_last(now, period);
    if (next + period < now) next = now;  // far behind: no burst of catch-up wake-ups
    if (periods > 0) sample_blocked_threads(static_cast<uint64_t>(std::min<int64_t>(periods, 1'000'000)));
  }
}

void WallPoller::sample_blocked_threads(uint64_t periods) {
  if (before_look_) before_look_();
  std::vector<pid_t> pids;
  {
    std::lock_guard<FeedLock> hold(feed_.lock);
    pids = feed_.table.running();
  }
  if (options_.stacks) stack_copy_.resize(options_.stack_copy_bytes());
  refused_before_.swap(refused_now_);
  refused_now_.clear();
  for (pid_t pid : pids) {
    for (pid_t tid : threads_of(pid)) {
      const std::string path = "/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/syscall";
      base::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
      if (!fd.valid()) {
        // Ended (ENOENT, ESRCH), or not ours to read: that is said when it
        // was refused at the look before too. A thread that is ending has
        // no mm after exit_mm(), and its /proc files are root's then
        // (task_dump_owner, fs/proc/base.c): refused once, at its last look.
        // A loaded suite run said so of a dumpable python3 (1 run in 40).
        if (errno == EACCES || errno == EPERM) {
          refused_now_.insert(tid);
          if (refused_before_.count(tid) != 0) {
            std::lock_guard<FeedLock> hold(feed_.lock);
            unreadable_.insert(tid);
          }
        }
        continue;
      }
      char text[256];
      const std::string_view before(text, base::read_syscall_text(fd.get(), text));
      base::BlockedRegisters regs;
      if (!base::blocked_registers_from_syscall_text(before, &regs)) continue;
      perf::Sample s;
      s.who.pid = static_cast<uint32_t>(pid);
      s.who.tid = static_cast<uint32_t>(tid);
      s.who.time = monotonic_ns();
      s.ip = regs.pc;
      if (options_.stacks) {
        s.regs_abi = PERF_SAMPLE_REGS_ABI_64;
        s.regs[perf::kUnwindRegisterBp] = 0;  // the kernel gives pc and sp alone
        s.regs[perf::kUnwindRegisterSp] = regs.sp;
        s.regs[perf::kUnwindRegisterIp] = regs.pc;
        s.reg_count = 3;
        iovec local{stack_copy_.data(), stack_copy_.size()};
        iovec remote{reinterpret_cast<void*>(regs.sp), stack_copy_.size()};
        const ssize_t copied = ::process_vm_readv(pid, &local, 1, &remote, 1, 0);
        s.stack = stack_copy_.data();
        s.stack_size = stack_copy_.size();
        // A thread that ran meanwhile left a stack of two moments: its pc
        // alone is kept (a one-frame stack, truncated), as inside.
        char after[256];
        const bool still = std::string_view(after, base::read_syscall_text(fd.get(), after)) == before;
        s.stack_copied = copied > 0 && still ? static_cast<uint64_t>(copied) : 0;
      }
      std::lock_guard<FeedLock> hold(feed_.lock);
      feed_.table.on_sample(s, false, periods);
    }
  }
}

}  // namespace profiling::outside
