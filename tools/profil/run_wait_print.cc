#include "run_wait_print.h"

#include <string.h>

#include <cstdio>

namespace profiling::cli {

std::string signal_name(int signo) {
  const char* name = sigabbrev_np(signo);
  return name ? std::string("SIG") + name : "signal " + std::to_string(signo);
}

std::string list_processes(const std::vector<std::string>& left) {
  std::string names;
  for (size_t i = 0; i < left.size() && i < 8; ++i) names += (i ? ", " : "") + left[i];
  if (left.size() > 8) names += " and " + std::to_string(left.size() - 8) + " more";
  return names;
}

void print_waiting_for(const std::string& program, pid_t pid, const std::vector<std::string>& left) {
  std::fprintf(stderr,
               "profil: %s (pid %d) has ended; waiting for the %zu process%s it left running: %s (^C stops "
               "waiting)\n",
               program.c_str(), static_cast<int>(pid), left.size(), left.size() == 1 ? "" : "es",
               list_processes(left).c_str());
}

void print_left_stopped(const std::vector<std::string>& stopped) {
  std::fprintf(stderr,
               "profil: not waiting for the %zu process%s left stopped, which nothing in the run can "
               "continue (a job-control stop, or a trace whose tracer is stopped): %s\n",
               stopped.size(), stopped.size() == 1 ? "" : "es", list_processes(stopped).c_str());
}

void print_released_tracee(const std::string& name, pid_t pid, int passed) {
  std::fprintf(stderr,
               "profil: %s (pid %d): was stopped in a trace with profil run as its tracer (it called "
               "PTRACE_TRACEME once its parent had ended); detached%s\n",
               name.c_str(), static_cast<int>(pid),
               passed != 0 ? (", " + signal_name(passed) + " passed on").c_str() : " to run on");
}

void print_stopped_waiting(int signo, const std::vector<std::string>& left_running) {
  // Their dumps appear when they end; --convert turns them into profiles.
  std::fprintf(stderr, "profil: stopped waiting (%s); left running, not converted: %s\n", signal_name(signo).c_str(),
               left_running.empty() ? "none" : list_processes(left_running).c_str());
}

}  // namespace profiling::cli
