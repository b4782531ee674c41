// A program's own signals under `profil run` (issue 9, signal_front.h):
// tests/run_progs/run_signals.c uses SIGPROF, SIGSEGV and ITIMER_PROF
// itself; each mode must print the same and end the same with and without
// the profiler, on both clocks, and still leave a profile where it ran.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "format/file_io.h"
#include "format/pprof.h"

namespace {

namespace fs = std::filesystem;

std::string bin(const std::string& name) {
  const char* dir = std::getenv("PROFIL_BUILD_DIR");
  return std::string(dir ? dir : ".") + "/bin/" + name;
}

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "profil-signals-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

struct Result {
  int status = -1;  // exit status, 128+N for a signal
  std::string out, err;
};

Result run(const std::vector<std::string>& argv, const fs::path& logs) {
  const fs::path out = logs / "stdout.txt", err = logs / "stderr.txt";
  pid_t pid = ::fork();
  if (pid == 0) {
    int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(o, 1);
    ::dup2(e, 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(126);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  Result r;
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

// Samples in every pprof profile the run left for `name`.
uint64_t samples_of(const fs::path& dir, const std::string& name) {
  uint64_t total = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string file = entry.path().filename().string();
    if (file.rfind(name + ".", 0) != 0 || !file.ends_with(".pb.gz")) continue;
    total += profiling::format::decode_pprof(profiling::format::read_file(entry.path().string())).total_count();
  }
  return total;
}

struct Case {
  std::string mode;
  int status;
  bool profiled;  // ran long enough to leave samples
};

class RunSignals : public ::testing::TestWithParam<std::string> {
 protected:
  Result plain(const std::string& mode) { return run({bin("run_signals"), mode}, logs_.path()); }
  Result profiled(const std::string& mode) {
    return run({bin("profil"), "run", "-o", out_.path().string(), "--clock", GetParam(), "--hz", "500", "--",
                bin("run_signals"), mode},
               logs_.path());
  }
  void expect_same(const Case& c) {
    const Result without = plain(c.mode);
    const Result with = profiled(c.mode);
    EXPECT_EQ(without.status, c.status) << c.mode << " without profil:\n" << without.out << without.err;
    EXPECT_EQ(with.status, without.status) << c.mode << " under profil run:\n" << with.err;
    EXPECT_EQ(with.out, without.out) << c.mode;
    if (c.profiled) {
      EXPECT_GT(samples_of(out_.path(), "run_signals"), 0u) << c.mode << ":\n" << with.err;
    }
  }
  TempDir logs_, out_;
};

TEST_P(RunSignals, ProgramOwningSigprofIsNotKilledByTicks) { expect_same({"own-sigprof", 0, true}); }

TEST_P(RunSignals, SigactionReportsTheProgramsOwnDispositions) {
  expect_same({"query", 0, false});
  EXPECT_EQ(plain("query").out,
            "SIGPROF SIG_DFL SIGSEGV SIG_DFL\nSIGPROF SIG_IGN\nSIGPROF handler\nhandled 1\nSIGPROF SIG_DFL\n");
}

TEST_P(RunSignals, RaisedSegvStillKills) { expect_same({"raise-segv", 128 + SIGSEGV, true}); }

TEST_P(RunSignals, SentSigprofTakesTheDefaultAction) { expect_same({"kill-prof", 128 + SIGPROF, true}); }

TEST_P(RunSignals, ProgramsSegvHandlerRecoversFromARealFault) { expect_same({"segv-handler", 0, true}); }

TEST_P(RunSignals, IgnoredSigprofStaysIgnoredAcrossExec) {
  expect_same({"exec-ignored", 0, false});
  EXPECT_EQ(plain("exec-ignored").out, "SIGPROF SIG_IGN\n");
}

TEST_P(RunSignals, KillSegvFromAShellEndsTheShell) {
  const std::vector<std::string> shell = {"/bin/sh", "-c", "kill -SEGV $$; echo survived"};
  const Result without = run(shell, logs_.path());
  std::vector<std::string> argv = {bin("profil"), "run", "-o", out_.path().string(), "--clock", GetParam(), "--"};
  argv.insert(argv.end(), shell.begin(), shell.end());
  const Result with = run(argv, logs_.path());
  EXPECT_EQ(without.status, 128 + SIGSEGV);
  EXPECT_EQ(with.status, without.status) << with.err;
  EXPECT_EQ(with.out, without.out);
}

// Its own ITIMER_PROF at 100 Hz: the program gets its own signals, about
// one per 10 ms of its CPU time, and none of profil's 500 per second. The
// itimer expires at the kernel tick after each 10 ms of process CPU time, so
// over C seconds it fires 100·C times, give or take the ticks at the ends;
// the bound (10 % + 3) leaves room for that, and is far below the 148–600
// signals a second the program received when profil's ticks reached it.
TEST_P(RunSignals, SelfProfilingProgramReceivesOnlyItsOwnTimer) {
  const Result with = profiled("itimer");
  ASSERT_EQ(with.status, 0) << with.err;
  int signals = 0;
  double cpu = 0;
  ASSERT_EQ(std::sscanf(with.out.c_str(), "signals %d cpu %lf", &signals, &cpu), 2) << with.out;
  const double expected = 100.0 * cpu;
  EXPECT_NEAR(signals, expected, 0.1 * expected + 3) << signals << " signals for " << cpu << " s of CPU";
  // And profil sampled it all the same: 500 Hz over ~1 s of CPU.
  const uint64_t samples = samples_of(out_.path(), "run_signals");
  EXPECT_NEAR(static_cast<double>(samples), 500.0 * cpu, 0.2 * 500.0 * cpu) << with.err;
}

INSTANTIATE_TEST_SUITE_P(Clocks, RunSignals, ::testing::Values("cpu", "perf"),
                         [](const auto& info) { return info.param; });

}  // namespace
