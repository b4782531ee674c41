// How profil run starts its program (run_launch.h): the shell's rules for
// finding it and the status when it cannot be run, so that profil run is
// as transparent as env(1) or time(1) around it.
#include "run_launch.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>

#include "errno_text.h"

extern char** environ;

namespace profiling::cli {
namespace {

namespace fs = std::filesystem;

// The program TERM and HUP are passed to (ForegroundSignals), read in the
// handler.
volatile pid_t g_child = -1;

void forward_signal(int signo) {
  if (g_child > 0) ::kill(g_child, signo);
}

}  // namespace

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

bool PreloadPath::prepare(const std::string& library, std::string* problem) {
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

PreloadPath::~PreloadPath() {
  if (dir_.empty()) return;
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

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

std::vector<std::string> child_environment(const std::string& library, const std::string& dir,
                                           const std::string& run_id, unsigned hz, const std::string& clock,
                                           bool stacks) {
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

ForegroundSignals::ForegroundSignals() {
  struct sigaction ignore{}, forward{};
  ignore.sa_handler = SIG_IGN;
  forward.sa_handler = forward_signal;
  forward.sa_flags = SA_RESTART;
  ::sigaction(SIGINT, &ignore, &old_int_);
  ::sigaction(SIGQUIT, &ignore, &old_quit_);
  ::sigaction(SIGTERM, &forward, &old_term_);
  ::sigaction(SIGHUP, &forward, &old_hup_);
}

ForegroundSignals::~ForegroundSignals() { restore(); }

void ForegroundSignals::restore() const {
  ::sigaction(SIGINT, &old_int_, nullptr);
  ::sigaction(SIGQUIT, &old_quit_, nullptr);
  ::sigaction(SIGTERM, &old_term_, nullptr);
  ::sigaction(SIGHUP, &old_hup_, nullptr);
}

void ForegroundSignals::forward_to(pid_t pid) { g_child = pid; }

Launched launch_program(const Resolved& program, const std::vector<std::string>& argv,
                        const std::vector<std::string>& env, const ForegroundSignals& signals,
                        const std::function<void(pid_t)>& before_exec) {
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  int error_pipe[2];
  if (::pipe2(error_pipe, O_CLOEXEC) != 0) throw std::runtime_error("pipe: " + errno_text(errno));
  // The child waits on go_pipe until before_exec has run (EOF: go on too).
  int go_pipe[2] = {-1, -1};
  if (before_exec && ::pipe2(go_pipe, O_CLOEXEC) != 0) throw std::runtime_error("pipe: " + errno_text(errno));
  std::vector<char*> cargv, cenv;
  for (auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (auto& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);

  std::fflush(nullptr);
  pid_t child = ::fork();
  if (child < 0) throw std::runtime_error("fork: " + errno_text(errno));
  if (child == 0) {
    signals.restore();
    ::close(error_pipe[0]);
    if (go_pipe[0] >= 0) {
      ::close(go_pipe[1]);
      char go;
      while (::read(go_pipe[0], &go, 1) < 0 && errno == EINTR) {
      }
      ::close(go_pipe[0]);
    }
    ::execve(program.path.c_str(), cargv.data(), cenv.data());
    int error = errno;
    (void)!::write(error_pipe[1], &error, sizeof error);
    ::_exit(error == ENOENT ? 127 : 126);
  }
  ForegroundSignals::forward_to(child);
  ::close(error_pipe[1]);
  if (go_pipe[0] >= 0) {
    ::close(go_pipe[0]);
    before_exec(child);
    ::close(go_pipe[1]);
  }
  Launched launched;
  launched.pid = child;
  ssize_t got;
  do {
    got = ::read(error_pipe[0], &launched.exec_errno, sizeof launched.exec_errno);
  } while (got < 0 && errno == EINTR);
  ::close(error_pipe[0]);
  launched.exec_failed = got == sizeof launched.exec_errno;
  if (!launched.exec_failed) launched.exec_errno = 0;
  return launched;
}

}  // namespace profiling::cli
