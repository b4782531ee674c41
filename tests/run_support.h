// What the end-to-end tests of `profil run` share: the build's binaries, a
// temporary directory, and running a command with its output captured.
#ifndef PROFIL_TESTS_RUN_SUPPORT_H
#define PROFIL_TESTS_RUN_SUPPORT_H

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace profil_test {

namespace fs = std::filesystem;

inline std::string build_dir() {
  const char* dir = std::getenv("PROFIL_BUILD_DIR");
  return dir ? dir : ".";
}
inline std::string bin(const std::string& name) { return build_dir() + "/bin/" + name; }

#ifdef PROFIL_TEST_SOURCE
// The source these tests are about (tests/run.cmake), for every profil run
// they start, whichever way they start it; an explicit --outside, or a
// PROFIL_SOURCE already set, still wins.
inline const bool kTestSourceSet = [] { return setenv("PROFIL_SOURCE", PROFIL_TEST_SOURCE, 0) == 0; }();
#endif

inline std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Whether profil's outside source opens one event per CPU for the program
// (perf_source.h): this user may (root; CAP_PERFMON is not looked for;
// else kernel.perf_event_paranoid at most 0). Else its events are per task.
inline bool per_cpu_events_allowed() {
  if (::geteuid() == 0) return true;
  std::ifstream in("/proc/sys/kernel/perf_event_paranoid");
  int paranoid = 2;
  return (in >> paranoid) && paranoid <= 0;
}

struct Result {
  int status = -1;  // exit status, 128+N for a signal
  int wait_status = 0;  // as waitpid(2) gave it
  std::string out, err;
};

// Runs argv with stdout and stderr captured in dir/stdout.txt and
// dir/stderr.txt, extra_env (NAME=value) added to ours.
inline Result run(const std::vector<std::string>& argv, const fs::path& dir,
                  const std::vector<std::string>& extra_env = {}) {
  const fs::path out = dir / "stdout.txt", err = dir / "stderr.txt";
  pid_t pid = fork();
  if (pid == 0) {
    int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(o, 1);
    dup2(e, 2);
    // The program gets 0, 1 and 2 alone, as from a shell.
    if (o > 2) close(o);
    if (e > 2) close(e);
    for (const auto& kv : extra_env) putenv(strdup(kv.c_str()));
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(126);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  Result r;
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.wait_status = status;
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "profil-run-XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// The one profile (*.pb.gz) in dir; a second is a test failure, none an
// empty path.
inline fs::path only_pprof(const fs::path& dir) {
  fs::path found;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().string().ends_with(".pb.gz")) {
      EXPECT_TRUE(found.empty()) << "two profiles: " << found << ", " << entry.path();
      found = entry.path();
    }
  return found;
}

}  // namespace profil_test

#endif  // PROFIL_TESTS_RUN_SUPPORT_H
