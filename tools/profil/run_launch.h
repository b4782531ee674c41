// Starting the program under profil run as a shell would start it, with
// the preload runtime in its environment: the file execvp would run (and the
// status a shell gives when there is none), a library path LD_PRELOAD can
// carry, the run's id and variables, the fork and exec with the terminal's
// signals left to the program. Kept apart from the wait (run_reap.h) and
// the conversion (run_convert.h), issue 21.
#ifndef PROFIL_TOOLS_RUN_LAUNCH_H
#define PROFIL_TOOLS_RUN_LAUNCH_H

#include <signal.h>
#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

namespace profiling::cli {

// execvp's search (POSIX, Shell Command Language "Command Search and
// Execution"): a name with a slash is used as it is; otherwise the first
// PATH entry holding an executable regular file wins. Exit statuses as a
// shell gives them: 127 not found, 126 found but not executable.
struct Resolved {
  std::string path;
  int status = 0;  // 0, 126 or 127
  std::string problem;
};
Resolved resolve_program(const std::string& name);

// libprofil.so next to the tool: <bindir>/../lib/libprofil.so (the build
// tree and an installation alike), or $PROFIL_LIBRARY; "" when not found.
std::string find_preload_library();

// ld.so(8): LD_PRELOAD is a list "separated by spaces or colons", so a
// library path holding either is split and nothing is preloaded (issue 11,
// case 9: the program then ran unprofiled with status 0). Such a path is
// reached through a symlink in a directory made for the run, whose path
// holds neither; it is removed when the run ends.
class PreloadPath {
 public:
  PreloadPath() = default;
  PreloadPath(const PreloadPath&) = delete;
  PreloadPath& operator=(const PreloadPath&) = delete;
  ~PreloadPath();
  // false, with *problem set, when no such directory can be made.
  bool prepare(const std::string& library, std::string* problem);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::string dir_;  // made for the run, when the library's path needed it
};

// "<pid>-<seconds><nanoseconds>-<8 hex digits>": unique to the run, its
// last part the token the runtime puts in its files' names.
std::string make_run_id();

// The environment of the profiled program: ours, with the profiling
// variables set (LD_PRELOAD appended to, so the program's own preloads stay
// in front of ours).
std::vector<std::string> child_environment(const std::string& library, const std::string& dir,
                                           const std::string& run_id, unsigned hz, const std::string& clock,
                                           bool stacks);

// Like a shell waiting for a foreground job: while it lives, the
// terminal's ^C and ^\ go to the program (its process group is ours), not
// to profil run; TERM and HUP sent to profil run are passed on to the
// program. The dispositions from before come back when it is destroyed.
class ForegroundSignals {
 public:
  ForegroundSignals();
  ~ForegroundSignals();
  ForegroundSignals(const ForegroundSignals&) = delete;
  ForegroundSignals& operator=(const ForegroundSignals&) = delete;
  // In the forked child: the program gets the dispositions from before.
  void restore() const;
  // Whom TERM and HUP are passed to; -1: nobody (the program has ended).
  static void forward_to(pid_t pid);

 private:
  struct sigaction old_int_{}, old_quit_{}, old_term_{}, old_hup_{};
};

// The program, started (profil run made the subreaper of its processes
// first, so that orphans come back to it): its pid, and whether its exec
// failed, with the errno.
struct Launched {
  pid_t pid = -1;
  bool exec_failed = false;
  int exec_errno = 0;
};
// Throws std::runtime_error when no process can be made. before_exec,
// when given, runs in profil with the child's pid while the child waits
// before its exec (the outside source opens its events there, so that
// they count from the exec on, as perf record's do).
Launched launch_program(const Resolved& program, const std::vector<std::string>& argv,
                        const std::vector<std::string>& env, const ForegroundSignals& signals,
                        const std::function<void(pid_t)>& before_exec = {});

}  // namespace profiling::cli

#endif  // PROFIL_TOOLS_RUN_LAUNCH_H
