// profil run's wait (run_reap.h): every process of the run comes back to
// it as their subreaper, so that no profile is read before it is written.
#include "run_reap.h"

#include <dirent.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <set>

#include "errno_text.h"
#include "format/file_io.h"
#include "run_print.h"

namespace profiling::cli {
namespace {

std::string process_name(pid_t pid) {
  std::string name;
  try {
    name = format::read_file("/proc/" + std::to_string(pid) + "/comm");
  } catch (const std::exception&) {
  }
  while (!name.empty() && name.back() == '\n') name.pop_back();
  return name.empty() ? "?" : name;
}

// A child in a ptrace stop with profil run as its tracer: a process of the
// run whose parent had ended (it was then the subreaper's child) called
// PTRACE_TRACEME — gdb's forked child, when gdb died before it — and
// stopped at its exec's SIGTRAP or at a signal. No one else can resume it,
// and waiting for it would be forever (issue 20): it is detached, the
// signal it stopped at passed on unless it was the SIGTRAP the kernel
// sends a traced process after its exec (ptrace(2): si_code SI_USER, from
// itself), so it runs on as it would untraced; a SIGSTOP passed on leaves
// it in a job-control stop (wait_for_the_rest). `stop` is the waitid
// report's si_status: the signal, a PTRACE_EVENT above its low 8 bits.
void release_tracee(pid_t pid, int stop) {
  int pass = 0;
  siginfo_t info{};
  // A signal-delivery-stop (a group-stop has no siginfo): its signal is
  // the process's own.
  if ((stop >> 8) == 0 && ::ptrace(PTRACE_GETSIGINFO, pid, nullptr, &info) == 0) {
    const bool exec_trap = stop == SIGTRAP && info.si_code == SI_USER && info.si_pid == pid;
    if (!exec_trap) pass = stop & 0xff;
  }
  if (::ptrace(PTRACE_DETACH, pid, nullptr, reinterpret_cast<void*>(static_cast<long>(pass))) != 0) {
    // Not ours to detach after all: take the stop's report (WSTOPPED
    // alone, never its exit's), so that it is not reported again.
    siginfo_t report{};
    ::waitid(P_PID, static_cast<id_t>(pid), &report, WSTOPPED | WNOHANG);
    return;
  }
  print_released_tracee(process_name(pid), pid, pass);
}

// Waits for one process to end (WNOWAIT first, so that its name can still
// be read from /proc). Returns its pid, 0 when none has ended and !block,
// -1 when there is none left (ECHILD). A stop reported on the way (only a
// tracee's stop reaches a waitid without WSTOPPED: ours) releases the
// tracee and the wait goes on.
pid_t reap_one(bool block, std::map<pid_t, Reaped>* reaped) {
  siginfo_t info{};
  for (;;) {
    info.si_pid = 0;
    if (::waitid(P_ALL, 0, &info, WEXITED | WNOWAIT | (block ? 0 : WNOHANG)) != 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (info.si_pid == 0) return 0;
    if (info.si_code == CLD_TRAPPED || info.si_code == CLD_STOPPED) {
      release_tracee(info.si_pid, info.si_status);
      continue;
    }
    break;
  }
  const pid_t pid = info.si_pid;
  Reaped& r = (*reaped)[pid];
  r.name = process_name(pid);
  while (::waitpid(pid, &r.status, 0) < 0 && errno == EINTR) {
  }
  return pid;
}

// Every process of the system, from /proc/PID/stat (proc(5)): its parent,
// its state and its name. "pid (comm) state ppid ...": comm may hold spaces
// and parentheses. A process that ends meanwhile is left out.
struct ProcStat {
  pid_t ppid = 0;
  char state = 0;
  std::string name;
};
std::map<pid_t, ProcStat> read_proc_stats() {
  std::map<pid_t, ProcStat> all;
  DIR* proc = ::opendir("/proc");
  if (!proc) return all;
  while (dirent* entry = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    std::string stat;
    try {
      stat = format::read_file(std::string("/proc/") + entry->d_name + "/stat");
    } catch (const std::exception&) {
      continue;  // ended meanwhile
    }
    const size_t open = stat.find('('), paren = stat.rfind(')');
    if (open == std::string::npos || paren == std::string::npos || paren + 4 >= stat.size()) continue;
    ProcStat& p = all[static_cast<pid_t>(pid)];
    p.state = stat[paren + 2];
    p.ppid = static_cast<pid_t>(std::strtol(stat.c_str() + paren + 4, nullptr, 10));
    p.name = stat.substr(open + 1, paren - open - 1);
  }
  ::closedir(proc);
  return all;
}

// The processes of the run still running with this one as their parent
// (orphans given back to the subreaper), "name (pid N)" each; zombies left
// out.
std::vector<std::string> processes_left() {
  std::vector<std::string> left;
  const pid_t self = ::getpid();
  for (const auto& [pid, p] : read_proc_stats())
    if (p.ppid == self && p.state != 'Z' && p.state != 'X')
      left.push_back(p.name + " (pid " + std::to_string(pid) + ")");
  std::sort(left.begin(), left.end());
  return left;
}

// The processes of the run that are left, when every one of them is
// stopped and nothing inside the run can resume them: each in a job-control
// stop (state T), or in a trace stop (t) whose tracer is one of them (its
// debugger is stopped too). "name (pid N)" each; empty when any of them
// still runs or sleeps, or is traced from outside the run (a debugger the
// user attached resumes it). Zombies are ended processes whose parent has
// not reaped them yet.
std::vector<std::string> stuck_processes() {
  std::map<pid_t, ProcStat> all = read_proc_stats();
  // profil run's descendants.
  std::set<pid_t> run;
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& [pid, p] : all)
      if ((p.ppid == ::getpid() || run.count(p.ppid)) && run.insert(pid).second) grew = true;
  }
  std::vector<std::string> stuck;
  for (const pid_t pid : run) {
    const ProcStat& p = all[pid];
    if (p.state == 'Z' || p.state == 'X') continue;
    if (p.state == 't') {
      // Traced: by whom (proc(5), TracerPid in /proc/PID/status).
      pid_t tracer = 0;
      try {
        const std::string status = format::read_file("/proc/" + std::to_string(pid) + "/status");
        const size_t at = status.find("\nTracerPid:");
        if (at != std::string::npos) tracer = static_cast<pid_t>(std::strtol(status.c_str() + at + 11, nullptr, 10));
      } catch (const std::exception&) {
        return {};
      }
      if (tracer != ::getpid() && !run.count(tracer)) return {};
    } else if (p.state != 'T') {
      return {};
    }
    stuck.push_back(p.name + " (pid " + std::to_string(pid) + ")");
  }
  std::sort(stuck.begin(), stuck.end());
  return stuck;
}

// What the program left running is waited for until it has all ended, or
// until SIGINT or SIGTERM reaches the tool: a daemonized descendant must
// not keep it waiting beyond a ^C (issue 11, case 12). While the program
// itself ran, the terminal's ^C went to its process group (ours ignored);
// the first one that reaches the tool after that stops the wait. The
// signals are blocked and taken with sigtimedwait, so one that arrives
// between two waits is not missed. Returns the signal, or 0.
//
// Nor is a process waited for that only a signal from outside could
// resume (issue 20): when every process left has been stopped
// (stuck_processes) for a second, the wait ends, and *left_stopped names
// them. Those stay as they are, as they would without profil (nothing in
// the run can continue them); whatever ends them later writes its dump
// then, for profil run --convert.
int wait_for_the_rest(std::map<pid_t, Reaped>* reaped, std::vector<std::string>* left_stopped) {
  sigset_t wanted, old_mask;
  sigemptyset(&wanted);
  for (int signo : {SIGCHLD, SIGINT, SIGTERM}) sigaddset(&wanted, signo);
  // A handler, not SIG_IGN: an ignored signal is discarded, never pending.
  struct sigaction note{}, old_int{}, old_term{}, old_chld{};
  note.sa_handler = [](int) {};
  ::sigaction(SIGINT, &note, &old_int);
  ::sigaction(SIGTERM, &note, &old_term);
  ::sigaction(SIGCHLD, &note, &old_chld);
  ::sigprocmask(SIG_BLOCK, &wanted, &old_mask);
  int stopped_by = 0;
  // Since when the same processes, all of them stopped, are all that is left.
  // (/proc is read at most every 250 ms: a build the program left running
  // sends a SIGCHLD per process.)
  std::vector<std::string> stuck;
  timespec stuck_since{}, last_look{};
  auto since = [](const timespec& then, const timespec& now) {
    return static_cast<double>(now.tv_sec - then.tv_sec) + static_cast<double>(now.tv_nsec - then.tv_nsec) * 1e-9;
  };
  for (;;) {
    pid_t pid;
    while ((pid = reap_one(false, reaped)) > 0) {
    }
    if (pid < 0) break;  // none left
    timespec now{};
    ::clock_gettime(CLOCK_MONOTONIC, &now);
    if (last_look.tv_sec == 0 || since(last_look, now) >= 0.25) {
      last_look = now;
      std::vector<std::string> now_stuck = stuck_processes();
      if (now_stuck.empty() || now_stuck != stuck) {
        stuck = std::move(now_stuck);
        stuck_since = now;
      } else if (since(stuck_since, now) >= 1.0) {
        *left_stopped = stuck;
        break;
      }
    }
    // SIGCHLD wakes it when one ends; the timeout only bounds a wait whose
    // SIGCHLD was taken by the reap above, and a stop's second.
    siginfo_t info{};
    const timespec wait{0, stuck.empty() ? 999'999'999 : 250'000'000};
    const int signo = ::sigtimedwait(&wanted, &info, &wait);
    if (signo == SIGINT || signo == SIGTERM) {
      stopped_by = signo;
      break;
    }
  }
  ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  ::sigaction(SIGCHLD, &old_chld, nullptr);
  return stopped_by;
}

}  // namespace

RunOutcome wait_for_run(const Launched& launched, const std::string& program, bool no_wait) {
  const pid_t child = launched.pid;
  RunOutcome outcome;
  outcome.pid = child;
  for (pid_t pid; (pid = reap_one(true, &outcome.reaped)) > 0;) {
    if (pid != child) continue;
    outcome.status = outcome.reaped[child].status;
    ForegroundSignals::forward_to(-1);
    if (launched.exec_failed) continue;
    // Say why the tool has not returned yet, and for whom it waits (those
    // that have already ended are not waited for).
    while (reap_one(false, &outcome.reaped) > 0) {
    }
    const std::vector<std::string> left = processes_left();
    if (left.empty()) continue;
    if (no_wait) {
      outcome.left_running = left;
      break;
    }
    print_waiting_for(program, child, left);
    outcome.stopped_by = wait_for_the_rest(&outcome.reaped, &outcome.left_stopped);
    if (outcome.stopped_by != 0) outcome.left_running = processes_left();
    if (!outcome.left_stopped.empty()) print_left_stopped(outcome.left_stopped);
    break;
  }
  if (launched.exec_failed) outcome.exec_error = errno_text(launched.exec_errno);
  return outcome;
}

}  // namespace profiling::cli
