#include "end_like.h"

#include <signal.h>
#include <sys/prctl.h>

#include <cstdio>

namespace profiling::cli {
namespace {
int g_end_signal = 0;
}  // namespace

void end_by_signal_later(int signo) { g_end_signal = signo; }
int pending_end_signal() { return g_end_signal; }

void end_by_signal(int signo) {
  std::fflush(nullptr);
  // A process that is not dumpable writes no core file, whatever the core
  // limit or core_pattern (core(5): a pipe ignores RLIMIT_CORE but not
  // dumpability): a program that crashed leaves its own core, profil none.
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  struct sigaction action = {};
  action.sa_handler = SIG_DFL;
  sigemptyset(&action.sa_mask);
  ::sigaction(signo, &action, nullptr);
  sigset_t only;
  sigemptyset(&only);
  sigaddset(&only, signo);
  ::sigprocmask(SIG_UNBLOCK, &only, nullptr);
  ::raise(signo);
}

}  // namespace profiling::cli
