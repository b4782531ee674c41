// What /proc says of a process the outside sampler did not see start (one
// it attaches to, the launched one's first image) and of a thread its
// records never named: the names profiles and file stems use, read as the
// preload names its dumps. The process table asks here for all it reads
// of /proc.
//
// NOT async-signal-safe: host side (files read, allocation). No state.
#ifndef PROFIL_OUTSIDE_PROC_PROCESS_H
#define PROFIL_OUTSIDE_PROC_PROCESS_H

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

namespace profiling::outside {

// A file's whole text ("" when it cannot be read).
std::string read_text(const std::string& path);
// What follows the last '/'.
std::string base_name(const std::string& path);
// A comm file's name (/proc/PID/comm, /proc/PID/task/TID/comm), without
// its newline.
std::string read_comm(const std::string& path);
// argv[0]'s base name (the name the preload's dumps use), else comm. A
// process title written over argv[0] (a postgres backend's "postgres:
// user db [local] idle", sshd's "sshd: user@pts/0") is no file name: then
// the executable's base name (issue 35).
std::string process_name(pid_t pid);
// argv[0] rewritten as a title (setproctitle, postgres' ps_status.c): it
// has a space or a colon and names no file as the process sees them.
bool rewritten_title(const std::string& argv0, pid_t pid);

// A running process, as /proc shows it now.
struct RunningProcess {
  std::string name;     // process_name
  std::string program;  // /proc/PID/exe's target
  pid_t ppid = 0;
  uint64_t started_ns = 0;  // CLOCK_MONOTONIC ns of its start (proc(5) stat field 22); 0 unknown
  // Its threads' names now (no COMM record tells those of threads that were
  // running before sampling began): tid, comm; the empty ones left out.
  std::vector<std::pair<pid_t, std::string>> thread_names;
  std::string maps;  // /proc/PID/maps
};
RunningProcess read_running_process(pid_t pid);

}  // namespace profiling::outside

#endif  // PROFIL_OUTSIDE_PROC_PROCESS_H
