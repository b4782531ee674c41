#include "outside/reader_priority.h"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace profiling::outside {

ThreadPriority raise_thread_priority() {
  ThreadPriority p;
  // The lowest real-time priority: above every normal thread, below any
  // real-time thread of the machine's (sched(7)). pid 0: this thread.
  sched_param param{};
  param.sched_priority = 1;
  if (::sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &param) == 0) {
    p.real_time = true;
    return p;
  }
  const int fifo_error = errno;
  const auto tid = static_cast<id_t>(::gettid());
  errno = 0;
  const int before = ::getpriority(PRIO_PROCESS, tid);
  // An unprivileged thread may go down to 20 - RLIMIT_NICE (setrlimit(2)).
  int floor = -20;
  if (rlimit limit{}; ::getrlimit(RLIMIT_NICE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < 40)
    floor = 20 - static_cast<int>(limit.rlim_cur);
  int nice_error = 0;
  if (::setpriority(PRIO_PROCESS, tid, -20) != 0) {
    nice_error = errno;
    if (floor > -20 && floor < before) (void)::setpriority(PRIO_PROCESS, tid, floor);
  }
  p.nice = ::getpriority(PRIO_PROCESS, tid);
  if (nice_error == 0) return p;
  p.refusal = "profil's reader thread runs at " +
              (p.nice < before ? "nice " + std::to_string(p.nice) : std::string("the program's priority")) +
              " (SCHED_FIFO: " + std::strerror(fifo_error) + "; nice -20: " + std::strerror(nice_error) +
              "): among many busy threads it falls behind; root, CAP_SYS_NICE or ulimit -r 1 lets it run first";
  return p;
}

bool raise_new_thread(unsigned long thread) {
  sched_param param{};
  param.sched_priority = 1;
  // glibc passes the policy to sched_setscheduler(2) on the thread's tid:
  // the flag keeps what the thread forks at the normal priority.
  return ::pthread_setschedparam(static_cast<pthread_t>(thread), SCHED_FIFO | SCHED_RESET_ON_FORK, &param) == 0;
}

void run_raised(const std::function<void()>& work) {
  std::thread raised([&] {
    (void)raise_thread_priority();
    work();
  });
  (void)raise_new_thread(raised.native_handle());
  raised.join();
}

int lower_own_nice() {
  const auto tid = static_cast<id_t>(::gettid());
  errno = 0;
  const int before = ::getpriority(PRIO_PROCESS, tid);
  // CAP_SYS_NICE (root) passes over RLIMIT_NICE, which is 0 for root too:
  // -20 first, the limit's floor only when refused.
  if (::setpriority(PRIO_PROCESS, tid, -20) != 0) {
    if (rlimit limit{}; ::getrlimit(RLIMIT_NICE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < 40)
      if (const int floor = 20 - static_cast<int>(limit.rlim_cur); floor < before)
        (void)::setpriority(PRIO_PROCESS, tid, floor);
  }
  // The nice value first, then out of real time (raise_new_thread) where
  // the thread was: the other way round, a clock thread at nice 0 among
  // 1,000 busy threads waited 5 s between the two calls (issue 32).
  // sched_setscheduler(2) keeps the nice value for SCHED_OTHER.
  sched_param param{};
  (void)::sched_setscheduler(0, SCHED_OTHER | SCHED_RESET_ON_FORK, &param);
  return ::getpriority(PRIO_PROCESS, tid);
}

}  // namespace profiling::outside
