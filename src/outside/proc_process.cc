#include "outside/proc_process.h"

#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace profiling::outside {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string base_name(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string read_comm(const std::string& path) {
  std::string comm = read_text(path);
  while (!comm.empty() && comm.back() == '\n') comm.pop_back();
  return comm;
}

bool rewritten_title(const std::string& argv0, pid_t pid) {
  if (argv0.find_first_of(" :") == std::string::npos) return false;
  // A path with a space that names a file (/opt/My App/app) is a name.
  const std::string root = "/proc/" + std::to_string(pid);
  const std::string path = argv0[0] == '/' ? root + "/root" + argv0 : root + "/cwd/" + argv0;
  return ::access(path.c_str(), F_OK) != 0;
}

std::string process_name(pid_t pid) {
  const std::string cmdline = read_text("/proc/" + std::to_string(pid) + "/cmdline");
  const std::string argv0 = cmdline.substr(0, cmdline.find('\0'));
  if (!argv0.empty() && rewritten_title(argv0, pid)) {
    char exe[4096];
    const ssize_t n = ::readlink(("/proc/" + std::to_string(pid) + "/exe").c_str(), exe, sizeof exe - 1);
    if (n > 0) return base_name(std::string(exe, static_cast<size_t>(n)));
  } else if (!argv0.empty()) {
    return base_name(argv0);
  }
  const std::string comm = read_comm("/proc/" + std::to_string(pid) + "/comm");
  return comm.empty() ? "process" : comm;
}

RunningProcess read_running_process(pid_t pid) {
  RunningProcess p;
  const std::string dir = "/proc/" + std::to_string(pid);
  p.name = process_name(pid);
  char exe[4096];
  const ssize_t n = ::readlink((dir + "/exe").c_str(), exe, sizeof exe - 1);
  if (n > 0) p.program.assign(exe, static_cast<size_t>(n));
  const std::string stat = read_text(dir + "/stat");
  unsigned long long start_ticks = 0;
  if (const size_t close = stat.rfind(')'); close != std::string::npos &&
      std::sscanf(stat.c_str() + close + 1,
                  " %*c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu", &p.ppid,
                  &start_ticks) == 2) {
    // starttime is in clock ticks since boot (CLOCK_BOOTTIME); the sampler's
    // times are CLOCK_MONOTONIC, which stops while the machine is suspended.
    const long hz = ::sysconf(_SC_CLK_TCK);
    timespec boot{}, mono{};
    ::clock_gettime(CLOCK_BOOTTIME, &boot);
    ::clock_gettime(CLOCK_MONOTONIC, &mono);
    const int64_t suspended = (boot.tv_sec - mono.tv_sec) * 1'000'000'000LL + (boot.tv_nsec - mono.tv_nsec);
    const int64_t started = static_cast<int64_t>(start_ticks) * (1'000'000'000LL / hz) - suspended;
    p.started_ns = started > 0 ? static_cast<uint64_t>(started) : 0;
  }
  std::error_code ignored;
  for (const auto& task : std::filesystem::directory_iterator(dir + "/task", ignored)) {
    const std::string tid = task.path().filename();
    const std::string comm = read_comm(task.path() / "comm");
    if (!comm.empty()) p.thread_names.emplace_back(static_cast<pid_t>(std::stol(tid)), comm);
  }
  p.maps = read_text(dir + "/maps");
  return p;
}

}  // namespace profiling::outside
