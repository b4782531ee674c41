#include "top_target.h"

#include <sys/syscall.h>
#include <sys/wait.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <thread>

#include "errno_text.h"
#include "run_launch.h"
#include "run_wait_print.h"

extern char** environ;

namespace profiling::cli {

namespace {

std::string comm_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string comm;
  std::getline(in, comm);
  return comm;
}

std::string status_words(int status) {
  if (WIFSIGNALED(status)) return "was killed by " + signal_name(WTERMSIG(status));
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

void block_stop_signals() { ::pthread_sigmask(SIG_BLOCK, &TopTarget::stop_signals(), nullptr); }

}  // namespace

const sigset_t& TopTarget::stop_signals() {
  static const sigset_t set = [] {
    sigset_t s;
    sigemptyset(&s);
    for (int signo : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&s, signo);
    return s;
  }();
  return set;
}

int TopTarget::pending_signal() {
  const timespec now{0, 0};
  const int signo = ::sigtimedwait(&stop_signals(), nullptr, &now);
  return signo > 0 ? signo : 0;
}

std::string TopTarget::start(OutsideRun* sampling, const Resolved& program, const std::vector<std::string>& command,
                             int* status) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  std::string refused;
  Launched launched;
  {
    const ForegroundSignals foreground;
    launched = launch_program(program, command, env, foreground, [&](pid_t pid) {
      refused = sampling->open_before_exec(pid);
      // The child has forked with the signals open; the sampler's
      // threads start with them blocked, as this one goes on.
      block_stop_signals();
      if (refused.empty()) sampling->start();
    });
  }
  pid_ = launched.pid;
  started_ = true;
  name_ = command.front().substr(command.front().rfind('/') + 1);
  label_ = name_ + " (pid " + std::to_string(pid_) + ")";
  if (launched.exec_failed) {
    ended();
    *status = 126;
    return program.path + ": " + errno_text(launched.exec_errno);
  }
  if (!refused.empty()) {
    stop();
    *status = 1;
    return "no profile: " + refused;
  }
  return "";
}

std::string TopTarget::attach(OutsideRun* sampling, pid_t pid) {
  pid_ = pid;
  name_ = comm_of(pid);
  if (name_.empty() && ::kill(pid, 0) != 0 && errno == ESRCH) return "no such process";
  label_ = (name_.empty() ? "process" : name_) + " (pid " + std::to_string(pid) + ")";
  if (std::string why = sampling->attach(pid); !why.empty()) return why;
  block_stop_signals();
  sampling->start();
  // Its end is seen through a pidfd (Linux 5.3), else by kill(pid, 0).
  pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  return "";
}

std::string TopTarget::attach_all(OutsideRun* sampling) {
  all_ = true;
  label_ = "every process";
  if (std::string why = sampling->attach_all(); !why.empty()) return why;
  block_stop_signals();
  sampling->start();
  return "";
}

bool TopTarget::ended() {
  if (all_) return false;
  if (ended_) return true;
  if (started_) {
    // launch_program made profil the subreaper: orphans of the program's
    // come back to it, and are reaped here with the program.
    int status = 0;
    for (pid_t reaped; (reaped = ::waitpid(-1, &status, WNOHANG)) > 0;)
      if (reaped == pid_) {
        ended_ = true;
        how_ended_ = name_ + " " + status_words(status);
      }
    return ended_;
  }
  pollfd ready{pidfd_, POLLIN, 0};
  if ((pidfd_ >= 0 && ::poll(&ready, 1, 0) > 0) || (::kill(pid_, 0) != 0 && errno == ESRCH)) {
    ended_ = true;
    how_ended_ = name_ + " ended";
  }
  return ended_;
}

std::string TopTarget::stop() {
  if (pidfd_ >= 0) ::close(pidfd_);
  pidfd_ = -1;
  if (!started_ || ended()) return "";
  ::kill(pid_, SIGTERM);
  std::string done = "sent " + label_ + " SIGTERM";
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (!ended()) {
    if (std::chrono::steady_clock::now() > until) {
      ::kill(pid_, SIGKILL);
      done += ", then SIGKILL";
      int status = 0;
      while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
      ended_ = true;
      how_ended_ = name_ + " " + status_words(status);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done + ": it " + how_ended_.substr(name_.size() + 1);
}

}  // namespace profiling::cli
