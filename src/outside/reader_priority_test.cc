#include "outside/reader_priority.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

namespace profiling::outside {
namespace {

// In a thread of its own: the policy is the thread's, and the test's
// thread keeps its own.
TEST(ReaderPriority, RaisedForTheCallingThreadAloneAndNotForItsChildren) {
  ThreadPriority got;
  int policy = -1, child_policy = -1;
  std::thread t([&] {
    got = raise_thread_priority();
    policy = ::sched_getscheduler(0);
    const pid_t child = ::fork();
    if (child == 0) ::_exit(::sched_getscheduler(0) == SCHED_OTHER && ::getpriority(PRIO_PROCESS, 0) >= 0 ? 0 : 1);
    int status = 0;
    ::waitpid(child, &status, 0);
    child_policy = WIFEXITED(status) ? WEXITSTATUS(status) : 2;
  });
  t.join();
  EXPECT_EQ(::sched_getscheduler(0), SCHED_OTHER);
  if (got.real_time) {
    EXPECT_TRUE(got.refusal.empty());
    EXPECT_EQ(policy & ~SCHED_RESET_ON_FORK, SCHED_FIFO);
    EXPECT_EQ(child_policy, 0) << "the forked child kept the real-time policy";
  } else if (got.refusal.empty()) {
    EXPECT_EQ(got.nice, -20);
  } else {
    EXPECT_NE(got.refusal.find("SCHED_FIFO"), std::string::npos) << got.refusal;
  }
}

// Without the right (no CAP_SYS_NICE, RLIMIT_RTPRIO and RLIMIT_NICE 0):
// one line saying what was refused and what would allow it.
TEST(ReaderPriority, RefusalIsOneLineNamingWhatWouldAllowIt) {
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    rlimit none{0, 0};
    ::setrlimit(RLIMIT_RTPRIO, &none);
    ::setrlimit(RLIMIT_NICE, &none);
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(3);
    const ThreadPriority p = raise_thread_priority();
    const std::string line = p.refusal + "\n";
    (void)!::write(pipe_fds[1], line.data(), line.size());
    ::_exit(p.real_time ? 1 : 0);
  }
  ::close(pipe_fds[1]);
  std::string out;
  char buffer[512];
  for (ssize_t n; (n = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0;) out.append(buffer, static_cast<size_t>(n));
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 3) GTEST_SKIP() << "cannot drop to nobody here";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "raised to real time without the right";
  EXPECT_NE(out.find("SCHED_FIFO: Operation not permitted"), std::string::npos) << out;
  EXPECT_NE(out.find("CAP_SYS_NICE"), std::string::npos) << out;
  EXPECT_EQ(out.find('\n'), out.size() - 1) << out;
}

}  // namespace
}  // namespace profiling::outside
