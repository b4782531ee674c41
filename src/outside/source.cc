#include "outside/source.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>

namespace profiling::outside {

uint64_t monotonic_ns() {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(t.tv_nsec);
}

std::set<pid_t> threads_of(pid_t pid) {
  std::set<pid_t> tids;
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d))
      if (e->d_name[0] >= '0' && e->d_name[0] <= '9') tids.insert(static_cast<pid_t>(std::atol(e->d_name)));
    ::closedir(d);
  }
  return tids;
}

FeedLock::FeedLock() {
  pthread_mutexattr_t attr;
  ::pthread_mutexattr_init(&attr);
  ::pthread_mutexattr_setprotocol(&attr, PTHREAD_PRIO_INHERIT);
  ::pthread_mutex_init(&mutex_, &attr);
  ::pthread_mutexattr_destroy(&attr);
}

FeedLock::~FeedLock() { ::pthread_mutex_destroy(&mutex_); }

SourceThread::SourceThread() {
  if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) wake_[0] = wake_[1] = -1;
}

SourceThread::~SourceThread() {
  // A thread still running is stopped; one joined already leaves the pipe
  // untouched (it may be a forked copy's too).
  if (thread_.joinable()) stop();
  for (int fd : wake_)
    if (fd >= 0) ::close(fd);
}

void SourceThread::start(std::function<void()> loop) {
  stopping_.store(false);
  thread_ = std::thread(std::move(loop));
}

void SourceThread::stop() {
  stopping_.store(true);
  if (wake_[1] >= 0) (void)!::write(wake_[1], "x", 1);
  if (thread_.joinable()) thread_.join();
  if (wake_[0] >= 0)
    for (char drained[16]; ::read(wake_[0], drained, sizeof drained) > 0;) {
    }
}

void SourceThread::stop_quietly() {
  stopping_.store(true);
  if (thread_.joinable()) thread_.join();
}

}  // namespace profiling::outside
