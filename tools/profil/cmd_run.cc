// profil run [options] [--] PROGRAM [ARGS...]
//
// Runs PROGRAM with libprofil preloaded (LD_PRELOAD) and PROFIL_RUN_DIR set,
// so that every process of the run — the program, its forked children, the
// programs they exec — writes a raw dump (<progname>.<pid>.profraw) when it
// ends; then turns the dumps of this run into pprof files (profile.proto,
// every executable mapping with its build id): <progname>.<pid>.pb.gz for
// each process that used real CPU, one small.<pid>.pb.gz for the rest (each
// sample labelled with its pid), gmon.out for gprof on request; says what
// was lost and why, and exits with the program's status. See docs/run.md.
#include <dirent.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "command.h"
#include "common.h"
#include "errno_text.h"
#include "base/settings.h"
#include "format/file_io.h"
#include "format/format_error.h"
#include "format/gmon.h"
#include "format/pprof.h"
#include "format/profraw.h"
#include "report/input.h"
#include "report/symbolizer.h"

extern char** environ;

namespace profiling::cli {
namespace {

namespace fs = std::filesystem;

// The default rate (docs/run.md, "Why 500 Hz"): five times the traditional
// 100 Hz, for a slowdown measured by bench/run_overhead.sh at about 2 % on
// the cpu clock and 5 % on the perf clock on a VM where a sampling signal
// costs ~60 µs; 1000 Hz doubled that cost for 1.4 times the precision.
constexpr unsigned kDefaultHz = 500;

// A process whose samples stand for at least this much CPU keeps a file of
// its own; the others of the run share one (docs/run.md, "Output").
constexpr uint64_t kOwnFileCpuNs = 10'000'000;

// env(1) and timeout(1): "125 if the command itself fails", so that profil
// run's own failures cannot be taken for the program's status.
constexpr int kUsageStatus = 125;

struct RunOptions {
  std::string output_dir;
  unsigned hz = 0;
  std::string clock;
  int stacks = -1;  // -1: $PROFIL_STACKS, else on; --no-stacks: 0
  bool convert_only = false;
  bool symbolize = true;
  bool verbose = false;
  bool gmon = false;
  std::vector<std::string> command;
};

std::string signal_name(int signo) {
  const char* name = sigabbrev_np(signo);
  return name ? std::string("SIG") + name : "signal " + std::to_string(signo);
}

int usage_error(const std::string& what, const std::string& why) {
  fail(what, why);
  return kUsageStatus;
}

// execvp's search (POSIX, Shell Command Language "Command Search and
// Execution"): a name with a slash is used as it is; otherwise the first
// PATH entry holding an executable regular file wins. Exit statuses as a
// shell gives them: 127 not found, 126 found but not executable.
struct Resolved {
  std::string path;
  int status = 0;  // 0, 126 or 127
  std::string problem;
};

Resolved resolve_program(const std::string& name) {
  auto check = [](const std::string& path) -> Resolved {
    struct stat st{};
    if (::stat(path.c_str(), &st) != 0) return {path, 127, errno_text(errno)};
    if (S_ISDIR(st.st_mode)) return {path, 126, "is a directory"};
    if (::access(path.c_str(), X_OK) != 0) return {path, 126, errno_text(errno)};
    return {path, 0, ""};
  };
  if (name.empty()) return {name, 127, "command not found"};
  if (name.find('/') != std::string::npos) return check(name);
  const char* path_env = std::getenv("PATH");
  std::string search = path_env ? path_env : "/usr/local/bin:/usr/bin:/bin";
  std::optional<Resolved> denied;
  size_t begin = 0;
  while (begin <= search.size()) {
    size_t end = std::min(search.find(':', begin), search.size());
    std::string dir = search.substr(begin, end - begin);
    if (dir.empty()) dir = ".";
    Resolved r = check(dir + "/" + name);
    if (r.status == 0) return r;
    if (r.status == 126 && !denied) denied = r;
    begin = end + 1;
  }
  if (denied) return *denied;
  return {name, 127, "command not found"};
}

// libprofil.so next to the tool: <bindir>/../lib/libprofil.so (the build
// tree and an installation alike).
std::string find_preload_library() {
  if (const char* explicit_path = std::getenv("PROFIL_LIBRARY"); explicit_path && *explicit_path)
    return explicit_path;
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  const fs::path bindir = self.parent_path();
  for (const char* relative : {PROFIL_LIBDIR_RELATIVE, "../lib"}) {
    fs::path candidate = (bindir / relative / "libprofil.so").lexically_normal();
    if (fs::exists(candidate, ec)) return candidate.string();
  }
  return "";
}

// ld.so(8): LD_PRELOAD is a list "separated by spaces or colons", so a
// library path holding either is split and nothing is preloaded (issue 11,
// case 9: the program then ran unprofiled with status 0). Such a path is
// reached through a symlink in a directory made for the run, whose path
// holds neither; it is removed when the run ends.
class PreloadPath {
 public:
  // false, with *problem set, when no such directory can be made.
  bool prepare(const std::string& library, std::string* problem) {
    if (library.find_first_of(" :") == std::string::npos) {
      path_ = library;
      return true;
    }
    std::error_code ec;
    const std::string target = fs::absolute(library, ec).string();
    const char* tmpdir = std::getenv("TMPDIR");
    std::string base = tmpdir && *tmpdir == '/' ? tmpdir : "/tmp";
    if (base.find_first_of(" :") != std::string::npos) base = "/tmp";
    std::string pattern = base + "/profil-lib-XXXXXX";
    // mkdtemp(3) makes it 0700 and ours: nobody else can put another
    // library there. Others may search it (not list it), so that a process
    // of the run that changed its user still loads the library.
    if (::mkdtemp(pattern.data()) == nullptr || ::chmod(pattern.c_str(), 0711) != 0) {
      *problem = "its path holds a space or a colon, which LD_PRELOAD cannot carry, and no directory for a "
                 "link to it could be made in " + base + " (" + errno_text(errno) + ")";
      return false;
    }
    dir_ = pattern;
    path_ = dir_ + "/libprofil.so";
    if (::symlink(target.c_str(), path_.c_str()) != 0) {
      *problem = "its path holds a space or a colon, which LD_PRELOAD cannot carry, and a link to it could "
                 "not be made in " + dir_ + " (" + errno_text(errno) + ")";
      return false;
    }
    return true;
  }
  const std::string& path() const { return path_; }
  ~PreloadPath() {
    if (dir_.empty()) return;
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

 private:
  std::string path_;
  std::string dir_;  // made for the run, when the library's path needed it
};

std::string make_run_id() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  uint32_t random = 0;
  if (::getrandom(&random, sizeof random, 0) != sizeof random) random = static_cast<uint32_t>(ts.tv_nsec);
  char text[64];
  std::snprintf(text, sizeof text, "%d-%lld%09ld-%08x", static_cast<int>(::getpid()),
                static_cast<long long>(ts.tv_sec), ts.tv_nsec, random);
  return text;
}

// The environment of the profiled program: ours, with the profiling
// variables set (LD_PRELOAD appended to, so the program's own preloads stay
// in front of ours).
std::vector<std::string> child_environment(const std::string& library, const std::string& dir,
                                           const std::string& run_id, unsigned hz,
                                           const std::string& clock, bool stacks) {
  std::map<std::string, std::string> overrides = {
      {"PROFIL_RUN_DIR", dir}, {"PROFIL_RUN_ID", run_id},
      {"PROFIL_HZ", std::to_string(hz)}, {"PROFIL_CLOCK", clock}, {"PROFIL_STACKS", stacks ? "1" : "0"}};
  const char* preload = std::getenv("LD_PRELOAD");
  overrides["LD_PRELOAD"] = preload && *preload ? std::string(preload) + ":" + library : library;
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry = *e;
    std::string key = entry.substr(0, entry.find('='));
    if (!overrides.count(key)) env.push_back(std::move(entry));
  }
  for (auto& [key, value] : overrides) env.push_back(key + "=" + value);
  return env;
}

pid_t g_child = -1;

void forward_signal(int signo) {
  if (g_child > 0) ::kill(g_child, signo);
}

// A process profil run waited for itself: the program, and every process
// of the run orphaned to it (it is their subreaper). Others are waited for
// by their own parents, and seen only through their dumps.
struct Reaped {
  int status = 0;
  std::string name;  // its comm, read while it was a zombie
};

struct RunOutcome {
  pid_t pid = 0;           // the program's
  int status = 0;          // the program's wait status
  std::string exec_error;  // the program could not be started
  std::map<pid_t, Reaped> reaped;
  // The run stopped waiting for what the program left running at this
  // signal (SIGINT or SIGTERM; 0 when it waited to the end), and for whom.
  int stopped_by = 0;
  std::vector<std::string> left_running;
  // The run stopped waiting because every process left was stopped (job
  // control, or a trace whose tracer is stopped too): "name (pid N)" each.
  std::vector<std::string> left_stopped;
};

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
  std::fprintf(stderr,
               "profil: %s (pid %d): was stopped in a trace with profil run as its tracer (it called "
               "PTRACE_TRACEME once its parent had ended); detached%s\n",
               process_name(pid).c_str(), static_cast<int>(pid),
               pass != 0 ? (", " + signal_name(pass) + " passed on").c_str() : " to run on");
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

std::string list_processes(const std::vector<std::string>& left) {
  std::string names;
  for (size_t i = 0; i < left.size() && i < 8; ++i) names += (i ? ", " : "") + left[i];
  if (left.size() > 8) names += " and " + std::to_string(left.size() - 8) + " more";
  return names;
}

// Runs the program and every process it leaves behind to completion (the
// tool is their subreaper, so orphaned grandchildren come back to it and
// their profiles are written before conversion).
RunOutcome run_program(const Resolved& program, const std::vector<std::string>& argv,
                       const std::vector<std::string>& env) {
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  int error_pipe[2];
  if (::pipe2(error_pipe, O_CLOEXEC) != 0) throw std::runtime_error("pipe: " + errno_text(errno));
  std::vector<char*> cargv, cenv;
  for (auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (auto& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);

  // Like a shell waiting for a foreground job: the terminal's ^C and ^\ go
  // to the program (its process group is ours), not to us; TERM and HUP sent
  // to us are passed on. The program gets the default dispositions back.
  struct sigaction ignore{}, forward{}, old_int{}, old_quit{}, old_term{}, old_hup{};
  ignore.sa_handler = SIG_IGN;
  forward.sa_handler = forward_signal;
  forward.sa_flags = SA_RESTART;
  ::sigaction(SIGINT, &ignore, &old_int);
  ::sigaction(SIGQUIT, &ignore, &old_quit);
  ::sigaction(SIGTERM, &forward, &old_term);
  ::sigaction(SIGHUP, &forward, &old_hup);

  std::fflush(nullptr);
  pid_t child = ::fork();
  if (child < 0) throw std::runtime_error("fork: " + errno_text(errno));
  if (child == 0) {
    ::sigaction(SIGINT, &old_int, nullptr);
    ::sigaction(SIGQUIT, &old_quit, nullptr);
    ::sigaction(SIGTERM, &old_term, nullptr);
    ::sigaction(SIGHUP, &old_hup, nullptr);
    ::close(error_pipe[0]);
    ::execve(program.path.c_str(), cargv.data(), cenv.data());
    int error = errno;
    (void)!::write(error_pipe[1], &error, sizeof error);
    ::_exit(error == ENOENT ? 127 : 126);
  }
  g_child = child;
  ::close(error_pipe[1]);
  int exec_errno = 0;
  ssize_t got;
  do {
    got = ::read(error_pipe[0], &exec_errno, sizeof exec_errno);
  } while (got < 0 && errno == EINTR);
  ::close(error_pipe[0]);

  RunOutcome outcome;
  outcome.pid = child;
  for (pid_t pid; (pid = reap_one(true, &outcome.reaped)) > 0;) {
    if (pid != child) continue;
    outcome.status = outcome.reaped[child].status;
    g_child = -1;
    if (got == sizeof exec_errno) continue;
    // Say why the tool has not returned yet, and for whom it waits (those
    // that have already ended are not waited for).
    while (reap_one(false, &outcome.reaped) > 0) {
    }
    const std::vector<std::string> left = processes_left();
    if (left.empty()) continue;
    std::fprintf(stderr,
                 "profil: %s (pid %d) has ended; waiting for the %zu process%s it left running: %s (^C stops "
                 "waiting)\n",
                 fs::path(program.path).filename().c_str(), static_cast<int>(child), left.size(),
                 left.size() == 1 ? "" : "es", list_processes(left).c_str());
    outcome.stopped_by = wait_for_the_rest(&outcome.reaped, &outcome.left_stopped);
    if (outcome.stopped_by != 0) outcome.left_running = processes_left();
    if (!outcome.left_stopped.empty())
      std::fprintf(stderr,
                   "profil: not waiting for the %zu process%s left stopped, which nothing in the run can "
                   "continue (a job-control stop, or a trace whose tracer is stopped): %s\n",
                   outcome.left_stopped.size(), outcome.left_stopped.size() == 1 ? "" : "es",
                   list_processes(outcome.left_stopped).c_str());
    break;
  }
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGQUIT, &old_quit, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  ::sigaction(SIGHUP, &old_hup, nullptr);
  if (got == sizeof exec_errno) outcome.exec_error = errno_text(exec_errno);
  return outcome;
}

// Why a program that left no dump could not have written one, from its
// file: "" when nothing in it explains that.
std::string why_not_preloaded(const std::string& path, int depth = 0) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  std::string why;
  ::elf_version(EV_CURRENT);
  if (Elf* elf = ::elf_begin(fd, ELF_C_READ, nullptr)) {
    if (::elf_kind(elf) == ELF_K_ELF) {
      size_t count = 0;
      bool interpreter = false;
      if (::elf_getphdrnum(elf, &count) == 0) {
        for (size_t i = 0; i < count; ++i) {
          GElf_Phdr header;
          if (::gelf_getphdr(elf, static_cast<int>(i), &header) && header.p_type == PT_INTERP) interpreter = true;
        }
      }
      // Only the dynamic loader named by PT_INTERP reads LD_PRELOAD (ld.so(8)).
      if (::gelf_getclass(elf) == ELFCLASS32)
        why = "it is a 32-bit program, which cannot load the 64-bit libprofil.so";
      else if (!interpreter)
        why = "it is statically linked (no PT_INTERP), so no dynamic loader runs to preload libprofil.so";
    }
    ::elf_end(elf);
  }
  struct stat st{};
  struct statvfs fs_info{};
  if (why.empty() && ::fstat(fd, &st) == 0 && ::fstatvfs(fd, &fs_info) == 0 && !(fs_info.f_flag & ST_NOSUID)) {
    // Secure-execution mode (ld.so(8), getauxval(3) AT_SECURE): the kernel
    // sets it when exec changes the credentials, and the loader then ignores
    // LD_PRELOAD paths with a slash.
    if ((st.st_mode & S_ISUID) && st.st_uid != ::getuid())
      why = "it is set-user-ID, and the loader ignores LD_PRELOAD in such programs";
    else if ((st.st_mode & S_ISGID) && (st.st_mode & S_IXGRP) && st.st_gid != ::getgid())
      why = "it is set-group-ID, and the loader ignores LD_PRELOAD in such programs";
    else if (::fgetxattr(fd, "security.capability", nullptr, 0) > 0)
      why = "it has file capabilities, and the loader ignores LD_PRELOAD in such programs";
  }
  // A script: what its "#!" line names is what runs (execve(2)).
  char head[256] = {};
  if (why.empty() && depth == 0 && ::pread(fd, head, sizeof head - 1, 0) > 2 && head[0] == '#' && head[1] == '!') {
    std::string line(head + 2, std::strcspn(head + 2, "\n"));
    const size_t begin = line.find_first_not_of(" \t");
    if (begin != std::string::npos) {
      const std::string interpreter = line.substr(begin, line.find_first_of(" \t", begin) - begin);
      const std::string inner = why_not_preloaded(interpreter, depth + 1);
      if (!inner.empty()) why = "its interpreter " + interpreter + ": " + inner;
    }
  }
  ::close(fd);
  return why;
}

// ---- conversion ----

class Converter {
 public:
  explicit Converter(bool symbolize) : symbolize_(symbolize) {}

  // Each file mapping gets its object's build id (NT_GNU_BUILD_ID), read
  // once per path.
  void add_build_ids(format::Profile* profile) {
    for (format::Mapping& mapping : profile->mappings) {
      if (mapping.path.empty() || mapping.path[0] != '/') continue;
      auto [it, inserted] = build_ids_.try_emplace(mapping.path);
      if (inserted) it->second = report::read_build_id(mapping.path);
      mapping.build_id = it->second;
    }
  }

  void write_pprof(const fs::path& path, const format::Profile& profile) {
    format::PprofSymbolizer symbolizer;
    if (symbolize_) {
      // Inlined functions as lines of the location, innermost first.
      symbolizer = [this](const format::Mapping& mapping, uint64_t address) {
        return symbolizer_.frames(&mapping, symbolizer_.symbolize(&mapping, address));
      };
    }
    format::write_file_atomically(path.string(), format::encode_pprof(profile, symbolizer));
  }

  // gmon.out for gprof: one histogram over the main executable's code, in
  // the link-time addresses gprof matches against the symbol table (the
  // load bias subtracted). false when the executable cannot be read.
  bool write_gmon(const fs::path& path, const format::Profile& profile, uint32_t hz) {
    if (profile.mappings.empty() || profile.mappings.front().path != profile.program) return false;
    const format::Mapping& main = profile.mappings.front();
    uint64_t low = UINT64_MAX, high = 0, bias = 0;
    bool have_bias = false;
    for (const report::LoadSegment& segment : symbolizer_.segments(main)) {
      if (!segment.executable) continue;
      low = std::min(low, segment.vaddr);
      high = std::max(high, segment.vaddr + segment.mem_size);
      if (main.file_offset >= segment.file_offset &&
          main.file_offset < segment.file_offset + std::max(segment.file_size, uint64_t{1})) {
        // elf(5): the segment's byte at file offset o is at vaddr + (o - p_offset).
        bias = main.start - (segment.vaddr + (main.file_offset - segment.file_offset));
        have_bias = true;
      }
    }
    if (!have_bias || low >= high) return false;
    format::GmonData data;
    data.histograms.push_back(format::histogram_from_samples(profile, bias, low, high, hz));
    format::write_file_atomically(path.string(), format::encode_gmon(data));
    return true;
  }

  std::vector<std::string> warnings() { return symbolizer_.take_warnings(); }

 private:
  bool symbolize_;
  report::Symbolizer symbolizer_;
  std::map<std::string, std::string> build_ids_;
};

// What became of one process of the run (one dump). Every line about a
// process is printed from this record, by print_process.
struct ProcessSummary {
  std::string dump;   // the .profraw it came from
  std::string label;  // "bash (pid 12)"
  int64_t pid = 0;
  uint64_t samples = 0;
  uint64_t period_ns = 0;
  std::string clock;
  uint32_t hz = 0;
  uint64_t dropped = 0;
  format::profraw::EndReason end_reason = format::profraw::EndReason::exit;
  uint32_t signal = 0;
  std::vector<std::string> files;  // the files holding its samples
  // CPU time no sample caught (threads with the signal blocked, a closed
  // perf descriptor), and the counts its [unsampled: ...] rows carry.
  std::vector<format::profraw::Unsampled> unsampled;
  uint64_t unsampled_counts = 0;
  std::string start_clock;  // differs from clock when sampling switched clocks
  // Its wait status, when profil run waited for it itself (the program, an
  // orphan); -1 when its parent did.
  int reaped_status = -1;
  // Samples whose stack the unwinder could not follow to the outermost
  // frame (shown under [truncated]), of those with a stack.
  uint64_t cut_stacks = 0, with_stacks = 0;

  bool empty() const { return samples == 0 && unsampled.empty(); }
  // What its profile stands for, unsampled rows included.
  uint64_t cpu_ns() const { return (samples + unsampled_counts) * period_ns; }
  double cpu_seconds() const { return static_cast<double>(samples) * static_cast<double>(period_ns) * 1e-9; }
};

// The runtime names a dump "<prog>.<pid>[.run-<token>][.<n>].profraw"
// (preload.cc, choose_name) and writes it as "<that>.tmp.<pid>" first.
// Its profiles are "<prog>.<pid>[.<n>]" + extension: the token only marks
// which run wrote it.
std::string dump_stem(const std::string& filename) {
  std::string stem = filename.substr(0, filename.rfind(".profraw"));
  const size_t token = stem.rfind(".run-");
  if (token != std::string::npos && token + 5 + format::profraw::kRunTokenSize <= stem.size())
    stem.erase(token, 5 + format::profraw::kRunTokenSize);
  return stem;
}

// The token of a run id (make_run_id): what follows its last '-'.
std::string run_token(const std::string& run_id) { return run_id.substr(run_id.rfind('-') + 1); }

// "<progname> (pid N)", progname as in the file names (argv[0]'s, which
// for a link like sh -> dash is the name the program was called by).
ProcessSummary summarize(const fs::path& raw, const format::ProfrawData& data) {
  ProcessSummary p;
  p.dump = raw.string();
  p.pid = data.profile.pid;
  const std::string stem = raw.stem().string();
  const std::string pid = "." + std::to_string(data.profile.pid);
  size_t at = stem.rfind(pid);
  std::string name = at != std::string::npos && at > 0 ? stem.substr(0, at)
                                                       : fs::path(data.profile.program).filename().string();
  p.label = name + " (pid " + std::to_string(data.profile.pid) + ")";
  p.samples = data.profile.total_count();
  p.period_ns = data.profile.period_ns;
  p.clock = data.profile.clock;
  p.hz = data.hz;
  p.dropped = data.profile.dropped;
  p.end_reason = data.end_reason;
  p.signal = data.signal;
  p.unsampled = data.unsampled;
  p.start_clock = data.start_clock;
  // Samples taken in libprofil's own code (its handler on its own stack,
  // the dump) are profil's, not the program's stacks: left out.
  auto in_profil = [&data](uint64_t address) {
    const format::Mapping* mapping = data.profile.mapping_for(address);
    return mapping != nullptr && fs::path(mapping->path).filename().string().starts_with("libprofil.so");
  };
  for (const format::Sample& sample : data.profile.samples) {
    if (sample.stack == format::StackTable::kNoCallers) continue;
    bool ours = in_profil(sample.address);
    for (const uint64_t frame : data.profile.stacks.callers(sample.stack)) ours = ours || in_profil(frame);
    if (ours) continue;
    p.with_stacks += sample.count;
    if (data.profile.stacks.truncated(sample.stack)) p.cut_stacks += sample.count;
  }
  return p;
}

std::string ending(const ProcessSummary& p) {
  using format::profraw::EndReason;
  switch (p.end_reason) {
    case EndReason::exit: return "";
    case EndReason::quick: return ", ended by _exit";
    case EndReason::exec: return ", then exec'd";
    case EndReason::signal: return ", ended by " + signal_name(static_cast<int>(p.signal));
    case EndReason::checkpoint: {
      // No final dump: what ended it is known only for a process profil run
      // waited for itself; a dump that could not be written says so on the
      // process's own stderr (the runtime's line, above ours).
      const int status = p.reaped_status;
      if (status != -1 && WIFSIGNALED(status))
        return ", killed by " + signal_name(WTERMSIG(status)) + ": sampled up to its last checkpoint";
      if (status != -1)
        return ", exited (status " + std::to_string(WEXITSTATUS(status)) +
               ") without its final dump (it could not be written, and its own line above says why, or the "
               "process ended with a raw exit_group system call, as Go programs do): sampled up to its last "
               "checkpoint";
      return ", ended without its final dump (it could not be written, and its own line above says why, or the "
             "process was killed by SIGKILL or ended with a raw exit_group system call, as Go programs do): "
             "sampled up to its last checkpoint";
    }
  }
  return "";
}

std::string join(const std::vector<std::string>& items, const char* separator = ", ") {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : separator) + item;
  return out;
}

// Milliseconds as %g prints them: "2", "0.5".
std::string fmt_ms(double ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", ms);
  return text;
}

std::string seconds(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", s);
  return text;
}

// The CPU time no sample caught, one line per cause (nothing when there is
// none): "profil: xz (pid 123): 3.85 s of CPU in 2 threads (tids 124, 125)
// not sampled: signals blocked"; and a note when the program's close moved
// it off the perf clock. Printed whatever the verbosity: a gap in the
// profile must never be silent.
// The clock profil run asked for (--clock, PROFIL_CLOCK): a process that
// sampled on perf-signal when the ring was asked for says why.
std::string g_requested_clock;

void print_unsampled(const ProcessSummary& p) {
  for (const format::profraw::Unsampled& record : p.unsampled) {
    char cpu[32];
    // Three decimals below 0.1 s: a few periods of a short process are not
    // "0.00 s".
    const double seconds = static_cast<double>(record.cpu_ns) * 1e-9;
    std::snprintf(cpu, sizeof cpu, seconds < 0.1 ? "%.3f" : "%.2f", seconds);
    std::string threads;
    if (record.threads > 0) {
      threads = " in " + std::to_string(record.threads) + (record.threads == 1 ? " thread (tid " : " threads (tids ");
      const uint32_t listed = std::min<uint32_t>(record.threads, std::size(record.tids));
      for (uint32_t i = 0; i < listed; ++i) threads += (i ? ", " : "") + std::to_string(record.tids[i]);
      threads += record.threads > listed ? ", ...)" : ")";
    }
    std::fprintf(stderr, "profil: %s: %s s of CPU%s not sampled: %s\n", p.label.c_str(), cpu, threads.c_str(),
                 format::unsampled_cause_name(record.cause));
  }
  if (p.start_clock == "perf-signal" && (g_requested_clock == "perf" || g_requested_clock == "auto"))
    std::fprintf(stderr,
                 "profil: %s: no perf ring buffer could be mapped (locked memory: kernel.perf_event_mlock_kb, "
                 "ulimit -l); sampled with a signal per sample (perf-signal clock)\n",
                 p.label.c_str());
  if (!p.start_clock.empty() && p.start_clock != p.clock)
    std::fprintf(stderr,
                 "profil: %s: switched from the %s clock to the %s clock (the program closed the sampler's "
                 "descriptors)\n",
                 p.label.c_str(), p.start_clock.c_str(), p.clock.c_str());
}

// `more`: what the line adds about the rest of the run ("; 3 more ...")
// when it is the run's only line.
void print_process(const ProcessSummary& p, const std::string& more = "") {
  if (p.samples == 0 && p.unsampled.empty()) {
    std::fprintf(stderr, "profil: %s: no samples (less than one sampling period of CPU%s)%s\n", p.label.c_str(),
                 ending(p).c_str(), more.c_str());
    return;
  }
  if (p.samples == 0) {
    // Only CPU time that ran unsampled (its lines follow): no "0 samples"
    // line pointing at a file that holds none of this process's samples.
    std::fprintf(stderr, "profil: %s: no samples (%s clock at %u Hz%s); its unsampled time -> %s%s\n",
                 p.label.c_str(), p.clock.c_str(), p.hz, ending(p).c_str(), join(p.files).c_str(), more.c_str());
    return;
  }
  std::fprintf(stderr, "profil: %s: %llu samples (%s s, %s clock at %u Hz%s%s) -> %s%s\n", p.label.c_str(),
               static_cast<unsigned long long>(p.samples), seconds(p.cpu_seconds()).c_str(), p.clock.c_str(), p.hz,
               p.dropped ? (", " + std::to_string(p.dropped) + " dropped").c_str() : "", ending(p).c_str(),
               join(p.files).c_str(), more.c_str());
}

// What the conversion of a run found and wrote.
struct Conversion {
  std::vector<ProcessSummary> processes;  // one per dump read, in file name order
  std::vector<std::string> files;         // every file written
  std::string shared_file;                // the file the small processes share, when written
  size_t shared_processes = 0;
  std::map<int64_t, bool> dumped;         // pid -> wrote a dump at its end (not only before an exec)
  std::set<std::pair<int64_t, int64_t>> images;  // (pid, start_ns) of every image accounted for
  std::vector<std::string> losses;        // one line each; already printed
};

// One line for a profile that should exist and does not; the run then
// exits 1 if the program exited 0 (docs/run.md, "Errors").
void lose(Conversion* c, const std::string& what, const std::string& why) {
  fail(what, why);
  c->losses.push_back(what);
}

// The program a ledger record names (its short name; "program" if none).
std::string program_of(const format::profraw::LedgerRecord& record) {
  return record.name[0] != '\0' ? record.name : "program";
}

// Converts the dumps. With `share`, a process whose samples stand for less
// than kOwnFileCpuNs has its samples put in one file with the other such
// processes of the run, each sample labelled with its pid; otherwise (and
// for the only such process) each process gets <stem>.pb.gz.
//
// The ledger's end records (format/profraw.h, LedgerRecord) stand for the
// processes that ended without a sample and so wrote no dump.
Conversion convert_dumps(const std::vector<fs::path>& dumps, const std::string& run_id, const RunOptions& options,
                         const fs::path& dir, bool share, const fs::path& ledger = {},
                         const std::vector<format::profraw::LedgerRecord>& records = {}) {
  Converter converter(options.symbolize);
  Conversion c;
  struct Pending {
    size_t index;  // in c.processes
    fs::path raw;
    format::Profile profile;
  };
  std::vector<Pending> small;

  // <stem>.pb.gz (and gmon.<stem>.out when asked) for one process.
  auto write_own = [&](ProcessSummary& p, const fs::path& raw, const format::Profile& profile) {
    const std::string stem = dump_stem(raw.filename().string());
    const fs::path pprof_path = raw.parent_path() / (stem + ".pb.gz");
    converter.write_pprof(pprof_path, profile);
    p.files.push_back(pprof_path.string());
    c.files.push_back(pprof_path.string());
    const fs::path gmon_path = raw.parent_path() / ("gmon." + stem + ".out");
    if (options.gmon && converter.write_gmon(gmon_path, profile, p.hz)) {
      p.files.push_back(gmon_path.string());
      c.files.push_back(gmon_path.string());
    }
    fs::remove(raw);
  };

  for (const fs::path& raw : dumps) {
    try {
      std::string bytes, problem;  // the problem without the path: fail() below names it
      // A run's own dumps are opened without following a link (--convert
      // reads what the user names).
      if (!format::try_read_file(raw.string(), &bytes, &problem, format::kMaxInputSize, run_id.empty()))
        throw format::FormatError(problem);
      if (!run_id.empty()) {
        // Only this run's dumps; another run's (or a foreign file) stay.
        format::profraw::Header header;
        try {
          header = format::read_profraw_header(bytes);
        } catch (const format::FormatError&) {
          continue;
        }
        if (std::string(header.run_id, strnlen(header.run_id, sizeof header.run_id)) != run_id) continue;
      }
      format::ProfrawData data = format::read_profraw(bytes);
      c.processes.push_back(summarize(raw, data));
      ProcessSummary& p = c.processes.back();
      c.dumped[p.pid] = c.dumped[p.pid] || data.end_reason != format::profraw::EndReason::exec;
      c.images.insert({data.profile.pid, data.profile.time_nanos});
      if (p.empty()) {
        // A process that never ran a sampling period (a shell that exec'd
        // at once): nothing to show.
        fs::remove(raw);
        continue;
      }
      format::add_unsampled_rows(data, &data.profile);
      p.unsampled_counts = data.profile.total_count() - p.samples;
      converter.add_build_ids(&data.profile);
      if (share && p.cpu_ns() < kOwnFileCpuNs)
        small.push_back({c.processes.size() - 1, raw, std::move(data.profile)});
      else
        write_own(p, raw, data.profile);
    } catch (const std::exception& e) {
      lose(&c, raw.string(), std::string(e.what()) + "; the dump is kept");
    }
  }

  // The images that ended without a sample: the last end record of each
  // (an image whose exec failed recorded its end again later).
  std::map<std::pair<int64_t, int64_t>, const format::profraw::LedgerRecord*> ended;
  for (const format::profraw::LedgerRecord& record : records)
    if (record.kind == static_cast<uint32_t>(format::profraw::LedgerKind::end))
      ended[{record.pid, record.start_ns}] = &record;
  for (const auto& [image, record] : ended) {
    if (!c.images.insert(image).second) continue;  // it has a dump after all
    ProcessSummary p;
    p.dump = ledger.string();
    p.pid = record->pid;
    p.label = program_of(*record) + " (pid " + std::to_string(record->pid) + ")";
    p.hz = record->hz;
    p.period_ns = record->hz ? 1'000'000'000ull / record->hz : 0;
    p.clock = format::describe_clock(record->clock);
    p.start_clock = format::describe_clock(record->start_clock);
    p.end_reason = static_cast<format::profraw::EndReason>(record->end_reason);
    p.signal = record->signal;
    c.dumped[p.pid] = c.dumped[p.pid] || p.end_reason != format::profraw::EndReason::exec;
    c.processes.push_back(std::move(p));
  }

  // The small processes share one file when there are several (of one
  // sampling period: only those can be summed).
  std::vector<report::LoadedProfile> shared;
  std::vector<const Pending*> shared_pending;
  for (const Pending& pending : small) {
    ProcessSummary& p = c.processes[pending.index];
    if (small.size() > 1 && pending.profile.period_ns == small.front().profile.period_ns) {
      shared.push_back({pending.raw.string(), report::InputKind::profraw, pending.profile});
      shared_pending.push_back(&pending);
      continue;
    }
    try {
      write_own(p, pending.raw, pending.profile);
    } catch (const std::exception& e) {
      lose(&c, pending.raw.string(), std::string(e.what()) + "; the dump is kept");
    }
  }
  if (!shared.empty()) {
    const fs::path path = dir / ("small." + std::to_string(::getpid()) + ".pb.gz");
    try {
      format::Profile merged = report::merge_profiles(shared);
      merged.program.clear();  // several programs
      converter.write_pprof(path, merged);
      c.files.push_back(path.string());
      c.shared_file = path.string();
      c.shared_processes = shared.size();
      for (const Pending* pending : shared_pending) {
        c.processes[pending->index].files.push_back(path.string());
        fs::remove(pending->raw);
      }
    } catch (const std::exception& e) {
      lose(&c, path.string(), std::string(e.what()) + "; the dumps of " + std::to_string(shared.size()) +
                                  " processes are kept");
    }
  }
  print_warnings(converter.warnings());
  return c;
}

// The default account of a run: one line (processes, samples, CPU, files).
// The processes of the run that left nothing, beyond their start (the
// ledger's start record, or an empty placeholder): killed by a signal, or
// ended by a raw exit_group system call, before their first checkpoint (a
// dump every max(50 ms, 1/32 of the CPU so far) while a process runs).
// Mostly processes that never ran a whole sampling period — strace's probe
// child, which strace SIGKILLs, children a program kills — and never a
// loss (issue 20): a process killed by a signal ended normally, and one
// that could not write says so on its own stderr. "name (pid N)" each.
std::string unwritten_clause(const std::vector<std::string>& unwritten) {
  if (unwritten.empty()) return "";
  return std::to_string(unwritten.size()) + (unwritten.size() == 1 ? " more process" : " more processes") +
         " ended before a checkpoint with nothing written (killed by a signal, or a raw exit_group system call)";
}

// The default account of a run: one line (processes, samples, CPU, files).
// Stacks cut short, when they are more than 5 % of a run's (issue 20: at
// 4 kHz half of a deep python3's stacks were, and a flame graph of them
// misleads without a word): how many, why, and what keeps more.
void print_cut_stacks(const Conversion& c, uint32_t hz) {
  uint64_t cut = 0, all = 0;
  for (const ProcessSummary& p : c.processes) {
    cut += p.cut_stacks;
    all += p.with_stacks;
  }
  if (all == 0 || cut * 20 <= all) return;
  std::fprintf(stderr,
               "profil: %llu of %llu samples (%.0f %%) have stacks cut short before the program's entry: deeper than "
               "the stack copy each perf ring record carries (16 KiB up to 1000 Hz, less above; %u Hz here), "
               "than PROFIL_STACK_DEPTH frames, or through code without unwind tables; a lower --hz, "
               "PROFIL_RING_STACK_BYTES (up to 61440) or --clock cpu (which unwinds the live stack) keeps more\n",
               static_cast<unsigned long long>(cut), static_cast<unsigned long long>(all),
               100.0 * static_cast<double>(cut) / static_cast<double>(all), hz);
}

// The programs the preload could not enter (issue 20: a static child, a
// set-ID program such as sudo, file capabilities, an environment without
// LD_PRELOAD): one line for each program and reason, instead of silence.
void print_not_entered(const std::vector<format::profraw::LedgerRecord>& records) {
  using format::profraw::NotEntered;
  std::map<std::pair<std::string, uint32_t>, std::vector<int64_t>> seen;
  for (const format::profraw::LedgerRecord& record : records)
    if (record.kind == static_cast<uint32_t>(format::profraw::LedgerKind::not_entered))
      seen[{std::string(record.name), record.end_reason}].push_back(record.pid);
  for (const auto& [key, pids] : seen) {
    const char* why = "";
    switch (static_cast<NotEntered>(key.second)) {
      case NotEntered::static_program: why = "it is statically linked: no dynamic loader runs to preload libprofil.so"; break;
      case NotEntered::set_id: why = "it is set-user-ID or set-group-ID: secure execution ignores LD_PRELOAD"; break;
      case NotEntered::capabilities: why = "it has file capabilities: secure execution ignores LD_PRELOAD"; break;
      case NotEntered::no_preload: why = "it was given an environment without LD_PRELOAD (sudo and env -i clear it)"; break;
      case NotEntered::seccomp_filter:
        why = "its process installed a seccomp filter, which the new image keeps: profil issues no new system call under it";
        break;
    }
    std::string which = "pid " + std::to_string(pids.front());
    if (pids.size() > 1) which = std::to_string(pids.size()) + " times, first as pid " + std::to_string(pids.front());
    std::fprintf(stderr, "profil: %s (exec'd, %s) was not profiled: %s; a sampler outside the process can (perf record)\n",
                 key.first.c_str(), which.c_str(), why);
  }
}

void print_summary(const Conversion& c, const fs::path& dir, const std::vector<std::string>& unwritten) {
  std::vector<const ProcessSummary*> sampled;
  uint64_t samples = 0, dropped = 0;
  double cpu = 0;
  for (const ProcessSummary& p : c.processes) {
    if (p.empty()) continue;
    sampled.push_back(&p);
    samples += p.samples;
    dropped += p.dropped;
    cpu += p.cpu_seconds();
  }
  if (sampled.empty()) return;
  if (sampled.size() == 1) {
    print_process(*sampled.front(), unwritten.empty() ? "" : "; " + unwritten_clause(unwritten));
    return;
  }
  const std::string shared = std::to_string(c.shared_processes) + " processes of under " +
                             std::to_string(kOwnFileCpuNs / 1'000'000) + " ms of CPU each";
  std::string files;
  if (c.files.size() <= 3) {
    for (const std::string& file : c.files)
      files += (files.empty() ? "" : ", ") + file + (file == c.shared_file ? " (" + shared + ")" : "");
  } else {
    files = std::to_string(c.files.size()) + " files in " + dir.string();
    if (!c.shared_file.empty()) files += " (" + shared + " in " + fs::path(c.shared_file).filename().string() + ")";
  }
  const size_t unsampled = c.processes.size() - sampled.size();
  std::string more;
  if (unsampled) more += ", " + std::to_string(unsampled) + " more under one sampling period";
  if (!unwritten.empty()) more += ", " + unwritten_clause(unwritten);
  std::fprintf(stderr, "profil: %zu processes sampled%s: %llu samples (%s s, %s clock at %u Hz%s) -> %s\n",
               sampled.size(), more.c_str(), static_cast<unsigned long long>(samples), seconds(cpu).c_str(),
               sampled.front()->clock.c_str(), sampled.front()->hz,
               dropped ? (", " + std::to_string(dropped) + " dropped").c_str() : "", files.c_str());
}

void print_conversion(const Conversion& c, const fs::path& dir, bool verbose,
                      const std::vector<std::string>& unwritten = {}) {
  if (!verbose) print_summary(c, dir, unwritten);
  size_t empty = 0;
  for (const ProcessSummary& p : c.processes) {
    if (p.empty()) {
      ++empty;
      continue;
    }
    if (verbose) print_process(p);
    print_unsampled(p);
  }
  if (verbose && empty > 0)
    std::fprintf(stderr, "profil: %zu process%s without samples skipped\n", empty, empty == 1 ? "" : "es");
  if (verbose && !unwritten.empty())
    std::fprintf(stderr,
                 "profil: %zu process%s ended before a checkpoint with nothing written (killed by a signal, or a "
                 "raw exit_group system call; one that could not write says so in its own line): %s\n",
                 unwritten.size(), unwritten.size() == 1 ? "" : "es", list_processes(unwritten).c_str());
}

// Dumps of this run left under their temporary name: a process killed
// (SIGKILL, or its exit_group while another thread wrote) while writing.
// Their header, written first, names the run; one too short to say is taken
// as ours when it is newer than the run's start. They are removed (the
// samples cannot be read back), except those of a process still alive
// (`alive`: the run stopped waiting for it). Returns, by pid, those of the
// processes with no complete dump (the runtime writes a provisional dump
// before exit handlers run, and a final one that dies half-way leaves that
// one intact): what they sampled is lost — by a kill, which is not a loss
// of profil's (issue 20), so the caller says so without changing the status.
template <typename Alive>
std::map<int64_t, std::string> remove_unfinished_dumps(const Conversion& c, const fs::path& dir,
                                                       const std::string& run_id, fs::file_time_type run_start,
                                                       Alive alive) {
  std::map<int64_t, std::string> lost;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const size_t at = name.find(".profraw.tmp.");
    if (at == std::string::npos || name.find(".run-" + run_token(run_id) + ".") == std::string::npos) continue;
    std::string bytes;
    try {
      bytes = format::read_file(entry.path().string());
    } catch (const std::exception&) {
      continue;
    }
    if (bytes.empty()) continue;  // a placeholder (list_run_files)
    bool ours;
    try {
      const format::profraw::Header header = format::read_profraw_header(bytes);
      ours = std::string(header.run_id, strnlen(header.run_id, sizeof header.run_id)) == run_id;
    } catch (const format::FormatError&) {
      ours = fs::last_write_time(entry.path(), ec) >= run_start && !ec;
    }
    if (!ours) continue;
    const int64_t pid = std::strtoll(name.c_str() + at + 13, nullptr, 10);
    if (alive(pid)) continue;
    fs::remove(entry.path(), ec);
    auto dumped = c.dumped.find(pid);
    if (dumped != c.dumped.end() && dumped->second) continue;
    lost[pid] = entry.path().string();
  }
  return lost;
}

// This run's files in its directory, by name: only names carrying the
// run's token are opened, so a file another user planted in a shared
// directory is never read (issue 11, case 2), and only regular files (a
// symlink, FIFO or device under such a name is left alone). An empty
// temporary is a placeholder: a process that started profiling and has not
// written its dump (preload.cc, choose_name).
struct RunFiles {
  std::vector<fs::path> dumps;
  std::map<int64_t, std::vector<fs::path>> placeholders;  // by pid
  fs::path ledger;  // the run's ledger (format/profraw.h)
  std::vector<format::profraw::LedgerRecord> records;
};

// The run's ledger: "processes.run-<token>.ledger", which the preload
// runtime appends to and never creates.
fs::path ledger_path(const fs::path& dir, const std::string& token) {
  return dir / (std::string(format::profraw::kLedgerPrefix) + token + format::profraw::kLedgerSuffix);
}

// Creates the run's ledger, empty, before the program starts: a name the
// run chose, created here (O_EXCL, never a file planted in its place). A
// ledger that cannot be created only costs speed: each process then
// writes a file of its own.
void create_ledger(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd >= 0) ::close(fd);
}

RunFiles list_run_files(const fs::path& dir, const std::string& token) {
  RunFiles files;
  const std::string mark = ".run-" + token;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find(mark + ".") == std::string::npos || entry.symlink_status(ec).type() != fs::file_type::regular)
      continue;
    if (name.ends_with(".profraw")) {
      files.dumps.push_back(entry.path());
      continue;
    }
    // "<name>.tmp.<pid>", empty: a placeholder.
    const size_t tmp = name.rfind(".profraw.tmp.");
    if (tmp != std::string::npos && entry.file_size(ec) == 0 && !ec)
      files.placeholders[std::strtoll(name.c_str() + tmp + 13, nullptr, 10)].push_back(entry.path());
  }
  std::sort(files.dumps.begin(), files.dumps.end());
  files.ledger = ledger_path(dir, token);
  std::string bytes, problem;
  if (format::try_read_file(files.ledger.string(), &bytes, &problem, format::kMaxInputSize, /*follow=*/false))
    files.records = format::read_ledger(bytes);
  return files;
}

int run_command(RunOptions options) {
  // Options, then the environment a wrapper script may set, then defaults.
  // base/settings.h: the library's own parser, and its rule for a bad
  // value (a warning, the default used instead).
  if (options.hz == 0) options.hz = base::hz_from_environment(std::getenv("PROFIL_HZ"), kDefaultHz);
  if (options.clock.empty())
    options.clock = base::kClockNames[base::clock_from_environment(std::getenv("PROFIL_CLOCK"), /*auto*/ 2)];
  if (options.stacks < 0) options.stacks = base::flag_from_environment("PROFIL_STACKS", std::getenv("PROFIL_STACKS"), true);
  g_requested_clock = options.clock;
  if (base::parse_clock(options.clock.c_str()) < 0)
    return usage_error("--clock", "'" + options.clock + "' is not one of " + base::kClockNameList);

  if (options.convert_only) {
    std::vector<fs::path> dumps(options.command.begin(), options.command.end());
    if (dumps.empty()) return usage_error("--convert", "no .profraw files given");
    const Conversion c = convert_dumps(dumps, "", options, ".", false);
    print_conversion(c, ".", true);
    return c.losses.empty() ? 0 : 1;
  }

  if (options.command.empty())
    return usage_error("run", "no program given (profil run [options] [--] PROGRAM [ARGS...])");
  const Resolved program = resolve_program(options.command.front());
  if (program.status != 0) {
    fail(options.command.front(), program.problem);
    return program.status;
  }
  if (options.output_dir.empty()) {
    const char* env = std::getenv("PROFIL_RUN_DIR");
    options.output_dir = env && *env ? env : ".";
  }
  std::error_code ec;
  fs::create_directories(options.output_dir, ec);
  if (ec) return usage_error(options.output_dir, error_text(ec));
  const fs::path dir = fs::canonical(options.output_dir, ec);
  if (ec) return usage_error(options.output_dir, error_text(ec));
  if (::access(dir.c_str(), W_OK) != 0) return usage_error(dir.string(), errno_text(errno));
  const std::string library = find_preload_library();
  if (library.empty()) return usage_error("libprofil.so", "not found next to the profil tool (set PROFIL_LIBRARY)");
  PreloadPath preload;
  if (std::string problem; !preload.prepare(library, &problem)) return usage_error(library, problem);

  const std::string run_id = make_run_id();
  const auto env = child_environment(preload.path(), dir.string(), run_id, options.hz, options.clock,
                                     options.stacks != 0);
  create_ledger(ledger_path(dir, run_token(run_id)));
  const fs::file_time_type run_start = fs::file_time_type::clock::now();
  const RunOutcome outcome = run_program(program, options.command, env);
  if (!outcome.exec_error.empty()) {
    fail(program.path, outcome.exec_error);
    return 126;
  }

  const RunFiles files = list_run_files(dir, run_token(run_id));
  Conversion c = convert_dumps(files.dumps, run_id, options, dir, true, files.ledger, files.records);
  // How the processes profil run waited for itself ended (the others'
  // parents took their statuses).
  auto reaped_of = [&outcome](int64_t pid) -> const Reaped* {
    auto it = outcome.reaped.find(static_cast<pid_t>(pid));
    return it != outcome.reaped.end() ? &it->second : nullptr;
  };
  for (ProcessSummary& p : c.processes)
    if (const Reaped* r = reaped_of(p.pid)) p.reaped_status = r->status;
  // Still alive: the run stopped waiting for it (a signal to the tool, or
  // it was left stopped); it writes its dump when it ends.
  const bool left_some = outcome.stopped_by != 0 || !outcome.left_stopped.empty();
  auto alive = [left_some](int64_t pid) { return left_some && ::kill(static_cast<pid_t>(pid), 0) == 0; };

  // What was not written, and why (docs/run.md, "Errors"). A process that
  // was killed by a signal ended normally (issue 20: strace SIGKILLs its
  // probe child, a program its workers), and one that started profiling
  // and left nothing else (a start in the ledger) is counted, never a
  // loss; a loss is a profile with samples that could not be written
  // where profil run can tell (the program, an orphan it waited for, a
  // dump begun and left empty), or a dump it cannot read.
  struct Note {
    std::string what, why;
    bool loss;
  };
  std::vector<Note> notes;
  const std::map<int64_t, std::string> unfinished = remove_unfinished_dumps(c, dir, run_id, run_start, alive);
  for (const auto& [pid, path] : unfinished) {
    const Reaped* r = reaped_of(pid);
    const std::string how = r != nullptr && WIFSIGNALED(r->status)
                                ? "was killed by " + signal_name(WTERMSIG(r->status))
                                : "ended (killed by a signal, or another of its threads ended the process)";
    notes.push_back({path,
                     "an unfinished dump: pid " + std::to_string(pid) + " " + how +
                         " while writing its profile, so what it sampled is lost; removed",
                     false});
  }
  const std::string name = fs::path(program.path).filename().string();
  const std::string main_label = name + " (pid " + std::to_string(outcome.pid) + ")";
  auto dumped_at_end = [&c](int64_t pid) {
    auto it = c.dumped.find(pid);
    return it != c.dumped.end() && it->second;
  };
  // The program never preloaded at all (nothing of its pid): its file may say why.
  const bool main_silent = !c.dumped.count(outcome.pid);
  const std::string why = main_silent ? why_not_preloaded(program.path) : "";
  // Those that ended before a checkpoint with nothing written, counted:
  // killed by a signal (profil run waited for them), or what ended them is
  // not known (their parents took their statuses).
  std::vector<std::string> killed, unrecorded;
  std::set<int64_t> said;
  for (const auto& [pid, reaped] : outcome.reaped) {
    if (!WIFSIGNALED(reaped.status) || dumped_at_end(pid) || unfinished.count(pid)) continue;
    said.insert(pid);
    const int signo = WTERMSIG(reaped.status);
    if (pid != outcome.pid) {
      killed.push_back(reaped.name + " (pid " + std::to_string(pid) + ", " + signal_name(signo) + ")");
    } else if (why.empty() && signo == SIGKILL) {  // else said below
      notes.push_back({main_label,
                       "killed by SIGKILL, which no process can catch, before its first checkpoint: what it "
                       "sampled could not be written",
                       false});
    } else if (why.empty()) {
      // The runtime writes the dump before most signals take their
      // default action: this one it could not, or does not catch.
      notes.push_back({main_label,
                       "killed by " + signal_name(signo) +
                           " and left no profile (if it could not write, its own line above says why)",
                       false});
    }
  }
  // A process that started profiling and left nothing else: a start in the
  // ledger with neither an end record nor a dump, or an empty placeholder
  // (the dump's file, created empty: at start by a process that could not
  // append to the ledger, else at its first dump, which then failed).
  std::map<int64_t, std::string> started;  // pid -> its program's name
  std::set<int64_t> in_ledger;
  for (const format::profraw::LedgerRecord& record : files.records) {
    if (record.kind != static_cast<uint32_t>(format::profraw::LedgerKind::start)) continue;
    if (c.images.count({record.pid, record.start_ns}) || alive(record.pid)) continue;
    started.emplace(record.pid, program_of(record));
    in_ledger.insert(record.pid);
  }
  std::set<int64_t> dump_failed;  // began its first dump and could not write it
  for (const auto& [pid, paths] : files.placeholders) {
    if (alive(pid)) continue;  // it will replace its own
    for (const fs::path& path : paths) fs::remove(path, ec);
    const std::string stem = dump_stem(paths.front().filename().string());
    started.emplace(pid, stem.substr(0, stem.rfind('.' + std::to_string(pid))));
    if (in_ledger.count(pid)) dump_failed.insert(pid);
  }
  fs::remove(files.ledger, ec);
  for (const auto& [pid, program_name] : started) {
    if (pid == outcome.pid || dumped_at_end(pid) || unfinished.count(pid) || said.count(pid)) continue;
    const std::string label = program_name + " (pid " + std::to_string(pid) + ")";
    const Reaped* r = reaped_of(pid);
    if (dump_failed.count(pid))
      notes.push_back({label,
                       "its profile could not be written: it created its dump's file and could not write into it "
                       "(its own line above says why)",
                       true});
    else if (r != nullptr && WIFEXITED(r->status))
      // An orphan profil run waited for: it exited, and its exit writes
      // the dump, unless it was a raw exit_group.
      notes.push_back({label,
                       "exited (status " + std::to_string(WEXITSTATUS(r->status)) +
                           ") and wrote no profile: it could not be written (its own line above says why), or "
                           "the process ended with a raw exit_group system call before its first checkpoint",
                       true});
    else
      unrecorded.push_back(label);
  }
  if (main_silent && !why.empty()) {
    notes.push_back({main_label, "no profile: " + why, false});
  } else if (main_silent && !WIFSIGNALED(outcome.status)) {
    notes.push_back({main_label,
                     "wrote no profile: it could not be written (its own line above says why), or the program "
                     "ended with a raw exit_group system call before its first checkpoint",
                     true});
  } else if (!dumped_at_end(outcome.pid) && !WIFSIGNALED(outcome.status)) {
    notes.push_back({main_label,
                     "exec'd a program that wrote no profile (a statically linked or set-user-ID program cannot "
                     "be preloaded; if it could not write, its own line above says why)",
                     false});
  }

  std::vector<std::string> unwritten = killed;
  unwritten.insert(unwritten.end(), unrecorded.begin(), unrecorded.end());
  print_conversion(c, dir, options.verbose, unwritten);
  print_not_entered(files.records);
  if (options.stacks != 0) print_cut_stacks(c, options.hz);
  for (const Note& note : notes) {
    if (note.loss)
      lose(&c, note.what, note.why);
    else
      fail(note.what, note.why);
  }
  bool any_sampled = false;
  for (const ProcessSummary& p : c.processes) any_sampled = any_sampled || !p.empty();
  const std::string under_a_period = "each under " + fmt_ms(1e3 / options.hz) + " ms of CPU at " +
                                     std::to_string(options.hz) + " Hz";
  const size_t under = c.processes.size();
  if (!any_sampled && under > 0 && unwritten.empty() && unfinished.empty() && c.losses.empty()) {
    std::fprintf(stderr, "profil: no profile was written: no process ran for a whole sampling period (%zu process%s, %s)\n",
                 under, under == 1 ? "" : "es", under_a_period.c_str());
  } else if (!any_sampled && !unwritten.empty()) {
    // Not "no process ran for a whole sampling period": one may have, and
    // been killed, or been unable to write (su, a privilege drop).
    std::vector<std::string> parts;
    if (under > 0)
      parts.push_back(std::to_string(under) + (under == 1 ? " process" : " processes") +
                      " under one sampling period (" + under_a_period + ")");
    if (!killed.empty())
      parts.push_back(std::to_string(killed.size()) + " killed by a signal before " +
                      (killed.size() == 1 ? "its" : "their") + " first checkpoint: " + list_processes(killed));
    if (!unrecorded.empty()) {
      std::string hint;
      struct stat st{};
      if (::geteuid() == 0 && ::stat(dir.c_str(), &st) == 0 && !(st.st_mode & S_IWOTH)) {
        char mode[16];
        std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
        hint = "; " + dir.string() + " (mode " + mode +
               ") is not writable by a process that gave up root's privileges (su, sudo -u, a server's workers)";
      }
      parts.push_back(std::to_string(unrecorded.size()) + (unrecorded.size() == 1 ? " process" : " processes") +
                      " ended before a checkpoint with nothing written: killed by a signal or a raw exit_group "
                      "system call, or unable to write into " + dir.string() +
                      " (then a line of its own above says why)" + hint);
    }
    std::fprintf(stderr, "profil: no profile was written: %s\n", join(parts, "; ").c_str());
  }

  if (outcome.stopped_by != 0) {
    // Their dumps appear when they end; --convert turns them into profiles.
    std::fprintf(stderr, "profil: stopped waiting (%s); left running, not converted: %s\n",
                 signal_name(outcome.stopped_by).c_str(),
                 outcome.left_running.empty() ? "none" : list_processes(outcome.left_running).c_str());
    return 128 + outcome.stopped_by;
  }
  int exit_status = 0;
  if (WIFEXITED(outcome.status)) exit_status = WEXITSTATUS(outcome.status);
  else if (WIFSIGNALED(outcome.status)) exit_status = 128 + WTERMSIG(outcome.status);
  if (!c.losses.empty() && exit_status == 0) exit_status = 1;
  return exit_status;
}

const RegisterCommand kRunCommand(
    "run", "Profile a program and every process it starts (LD_PRELOAD); write pprof files",
    [](CLI::App& app) -> std::function<int()> {
      auto options = std::make_shared<RunOptions>();
      app.add_option("-o,--output", options->output_dir,
                     "Directory for the profiles (default: $PROFIL_RUN_DIR, else the current directory)");
      app.add_option("--hz", options->hz, "Samples per CPU-second (default: $PROFIL_HZ, else 500)")
          ->check(CLI::Range(1u, 100000u));
      app.add_option("--clock", options->clock, std::string("Sampling clock: ") + base::kClockNameList + " (default: $PROFIL_CLOCK, else auto)");
      app.add_flag_callback("--no-stacks", [options] { options->stacks = 0; },
                            "Sample the PC alone, without call stacks (default: $PROFIL_STACKS, else stacks on)");
      app.add_flag("-v,--verbose", options->verbose, "One line per process on stderr, instead of one for the run");
      app.add_flag("--gmon", options->gmon,
                   "Also write gmon.<progname>.<pid>.out (for gprof) for each process that has a file of its own");
      app.add_flag("--convert", options->convert_only,
                   "Convert the given .profraw files (left by an interrupted run) instead of running a program");
      app.add_flag_callback("--no-symbolize", [options] { options->symbolize = false; },
                            "Leave function names out of the pprof files");
      // The program and its arguments never reach CLI11: main() splits them
      // off at the first word that is not an option of ours (takes_program).
      app.footer("Usage: profil run [options] [--] PROGRAM [ARGS...]\n"
                 "Options end at the first word that is not one, or at --; the rest is the program's, unchanged.\n");
      return [options]() {
        options->command = program_words();
        return run_command(*options);
      };
    },
    10, /*takes_program=*/true, kUsageStatus);

}  // namespace
}  // namespace profiling::cli
