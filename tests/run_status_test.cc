// How `profil run` accounts for the ends of the processes of a run
// (issue 20, docs/run.md "Errors"): its status is the program's — a process
// killed by a signal ended normally, one that left only its start is
// counted — it never waits forever for a process stopped under a trace,
// and its messages say what happened, errnos by name. Each case is run
// plainly first, as the oracle, where it can be.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <regex>
#include <string>
#include <system_error>
#include <vector>

#include "errno_text.h"
#include "run_support.h"

namespace {

using namespace profil_test;

// profil run, under timeout(1) so that a run waiting forever fails the test
// (status 124) instead of hanging it.
Result profiled(const fs::path& dir, const fs::path& out, const std::vector<std::string>& command,
                const std::vector<std::string>& options = {}) {
  std::vector<std::string> argv = {"/usr/bin/timeout", "60", bin("profil"), "run", "-o", out.string()};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.push_back("--");
  argv.insert(argv.end(), command.begin(), command.end());
  return run(argv, dir);
}

// The pid a run_status mode printed as "child PID", or 0.
pid_t child_of(const std::string& out) {
  std::smatch m;
  return std::regex_search(out, m, std::regex("child ([0-9]+)")) ? static_cast<pid_t>(std::stoi(m[1])) : 0;
}

// A child a traceme mode left (stopped, or traced by whoever adopted it
// in the plain run) is killed, if it is still ours. Its command line reads
// empty while it execs: then it is read again.
void kill_leftover(pid_t pid) {
  if (pid <= 0) return;
  const std::string path = "/proc/" + std::to_string(pid) + "/cmdline";
  for (int attempt = 0; attempt < 100; ++attempt) {
    if (!fs::exists(path)) return;
    const std::string cmdline = slurp(path);
    if (!cmdline.empty()) {
      if (cmdline.find("run_status") != std::string::npos) kill(pid, SIGKILL);
      return;
    }
    usleep(10'000);
  }
}

TEST(ErrnoText, NameAndText) {
  using profiling::cli::errno_text;
  EXPECT_EQ(errno_text(ENOSYS), "ENOSYS (Function not implemented)");
  EXPECT_EQ(errno_text(EACCES), "EACCES (Permission denied)");
  EXPECT_EQ(errno_text(EMFILE), "EMFILE (Too many open files)");
  EXPECT_EQ(errno_text(4242), "errno 4242 (Unknown error 4242)");
  EXPECT_EQ(profiling::cli::error_text(std::make_error_code(std::errc::not_a_directory)),
            "ENOTDIR (Not a directory)");
  EXPECT_EQ(profiling::cli::error_text(std::error_code(ENOSPC, std::system_category())),
            "ENOSPC (No space left on device)");
}

// A program killed by a signal: profil run writes what it has, then ends by
// the same signal, so that its parent sees the plain run's wait status
// (issue 32), from inside and from outside; profil leaves no core file of
// its own (the program's shell is told to leave none: any core here is
// profil's).
TEST(RunStatus, ProgramKilledBySignalEndsProfilBySignal) {
  const bool core_to_file = slurp("/proc/sys/kernel/core_pattern").rfind('|', 0) != 0;
  for (const int signo : {SIGKILL, SIGTERM, SIGSEGV, SIGABRT}) {
    for (const char* source : {"--inside", "--outside"}) {
      TempDir dir;
      const std::vector<std::string> command = {"/bin/sh", "-c", "ulimit -c 0; kill -" + std::to_string(signo) + " $$"};
      const Result plain = run(command, dir.path());
      ASSERT_TRUE(WIFSIGNALED(plain.wait_status) && WTERMSIG(plain.wait_status) == signo) << plain.wait_status;
      // profil may dump core where its parent lets it: this test lets it.
      struct rlimit unlimited = {RLIM_INFINITY, RLIM_INFINITY}, saved = {};
      getrlimit(RLIMIT_CORE, &saved);
      setrlimit(RLIMIT_CORE, &unlimited);
      const Result r = profiled(dir.path(), dir.path() / "out", command, {source});
      setrlimit(RLIMIT_CORE, &saved);
      EXPECT_TRUE(WIFSIGNALED(r.wait_status)) << source << " signal " << signo << ": wait status " << r.wait_status
                                              << "\n" << r.err;
      if (WIFSIGNALED(r.wait_status)) {
        EXPECT_EQ(WTERMSIG(r.wait_status), signo) << source << "\n" << r.err;
        EXPECT_FALSE(WCOREDUMP(r.wait_status)) << source << " signal " << signo;
      }
      if (core_to_file) {
        for (const auto& entry : fs::directory_iterator(dir.path()))
          EXPECT_NE(entry.path().filename().string().rfind("core", 0), 0u) << entry.path();
      }
    }
  }
}

// Where the kernel refuses perf events (here a seccomp filter around
// profil, as paranoid 3 or a container's profile would), the default
// source moves inside and says so in one line naming the refusal, never in
// silence (issue 32); the run still profiles its program.
TEST(RunStatus, RefusedPerfEventsMoveTheDefaultInsideAndSayWhy) {
  TempDir dir;
  const Result r = run({bin("run_without_perf"), bin("profil"), "run", "-o", (dir.path() / "out").string(), "--",
                        bin("run_invisible"), "burn", "0.3"},
                       dir.path(), {"PROFIL_SOURCE=auto"});
  const Result plain = run({bin("run_invisible"), "burn", "0.3"}, dir.path());
  EXPECT_EQ(r.status, plain.status) << r.err;
  EXPECT_NE(r.err.find("profil: sampling from inside"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("EACCES"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("from outside)"), std::string::npos) << r.err;
}

// An output directory that cannot be made: the errno by name (before: "Not
// a directory", the text alone).
TEST(RunStatus, OutputDirectoryErrorNamesTheErrno) {
  TempDir dir;
  const Result r = profiled(dir.path(), "/dev/null/profiles", {"/bin/true"});
  EXPECT_EQ(r.status, 125) << r.err;
  EXPECT_NE(r.err.find("ENOTDIR (Not a directory)"), std::string::npos) << r.err;
}

// A program that SIGKILLs its 20 children, as strace does its probe child,
// exits 0, and so does profil run (before: 1, with 20 lines "started
// profiling and wrote no profile"); the children are counted.
TEST(RunStatus, ChildrenKilledByTheirParentAreANormalEnd) {
  TempDir dir;
  const Result plain = run({bin("run_status"), "kill-children", "20"}, dir.path());
  ASSERT_EQ(plain.status, 0) << plain.err;
  ASSERT_EQ(plain.out, "killed 20\n");
  const Result with = profiled(dir.path(), dir.path() / "out", {bin("run_status"), "kill-children", "20"});
  EXPECT_EQ(with.status, plain.status) << with.err;
  EXPECT_EQ(with.out, plain.out);
  EXPECT_EQ(with.err.find("wrote no profile"), std::string::npos) << with.err;
  EXPECT_NE(with.err.find("20 more processes ended before a checkpoint with nothing written (killed by a signal"),
            std::string::npos)
      << with.err;
  for (const auto& entry : fs::directory_iterator(dir.path() / "out"))
    EXPECT_EQ(entry.path().extension(), ".gz") << entry.path() << " left behind";
}

// strace -f SIGKILLs the child it forks to probe ptrace (before: status 1,
// "strace (pid N): started profiling and wrote no profile").
TEST(RunStatus, StraceFollowingForksKeepsItsStatus) {
  if (access("/usr/bin/strace", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/strace";
  TempDir dir;
  const std::vector<std::string> command = {"/usr/bin/strace", "-f", "-o", "/dev/null", "/bin/true"};
  const Result plain = run(command, dir.path());
  if (plain.status != 0) GTEST_SKIP() << "strace cannot trace here: " << plain.err;
  const Result with = profiled(dir.path(), dir.path() / "out", command);
  EXPECT_EQ(with.status, 0) << with.err;
  EXPECT_EQ(with.err.find("wrote no profile"), std::string::npos) << with.err;
}

// A child that, orphaned to profil run (the subreaper), calls
// PTRACE_TRACEME — profil run is then its tracer, as for gdb's forked child
// when gdb has died — and stops at a SIGSTOP of its own. Before: profil run
// waited forever. Now it detaches the child, passing the SIGSTOP on, and
// does not wait for a process left stopped. The plain run does not wait
// for the child either.
TEST(RunStatus, OrphanStoppedUnderTracemeIsNotWaitedForForever) {
  TempDir dir;
  const Result plain = run({bin("run_status"), "traceme-stop"}, dir.path());
  kill_leftover(child_of(plain.out));
  ASSERT_EQ(plain.status, 0) << plain.err;
  const Result with = profiled(dir.path(), dir.path() / "out", {bin("run_status"), "traceme-stop"});
  kill_leftover(child_of(with.out));
  ASSERT_NE(with.status, 124) << "profil run was still waiting after 60 s\n" << with.err;
  EXPECT_EQ(with.status, plain.status) << with.err;
  EXPECT_NE(with.err.find("with profil run as its tracer"), std::string::npos) << with.err;
  EXPECT_NE(with.err.find("detached, SIGSTOP passed on"), std::string::npos) << with.err;
  EXPECT_NE(with.err.find("not waiting for the 1 process left stopped"), std::string::npos) << with.err;
}

// The same child execs instead: it stops at the SIGTRAP the kernel sends a
// traced process after exec, which is not passed on; detached, the new
// image runs to its end and profil run waits for it as for any orphan.
TEST(RunStatus, OrphanExecingUnderTracemeRunsOn) {
  TempDir dir;
  const Result plain = run({bin("run_status"), "traceme-exec"}, dir.path());
  kill_leftover(child_of(plain.out));
  ASSERT_EQ(plain.status, 0) << plain.err;
  const Result with = profiled(dir.path(), dir.path() / "out", {bin("run_status"), "traceme-exec"});
  kill_leftover(child_of(with.out));
  ASSERT_NE(with.status, 124) << "profil run was still waiting after 60 s\n" << with.err;
  EXPECT_EQ(with.status, plain.status) << with.err;
  EXPECT_NE(with.out.find("exec'd image ran\n"), std::string::npos) << with.out << with.err;
  EXPECT_NE(with.err.find("detached to run on"), std::string::npos) << with.err;
  EXPECT_EQ(with.err.find("SIGTRAP"), std::string::npos) << with.err;
}

// A child that gave up root's privileges cannot write into the output
// directory: the runtime says so on its stderr, and profil run must not
// call the run one of processes under a sampling period (before: "no
// process ran for a whole sampling period", although the child ran 0.2 s).
TEST(RunStatus, ChildThatCouldNotWriteIsNotCalledTooShort) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to drop privileges";
  TempDir dir;
  const fs::path out = dir.path() / "out";
  fs::create_directories(out);
  chmod(out.c_str(), 0755);
  const Result plain = run({bin("run_status"), "drop-child"}, dir.path());
  ASSERT_EQ(plain.status, 0) << plain.err;
  const Result with = profiled(dir.path(), out, {bin("run_status"), "drop-child"}, {"--hz", "100"});
  EXPECT_EQ(with.status, plain.status) << with.err;
  EXPECT_NE(with.err.find("could not write the profile"), std::string::npos) << with.err;  // the runtime's line
  EXPECT_EQ(with.err.find("no process ran for a whole sampling period"), std::string::npos) << with.err;
  EXPECT_NE(with.err.find("unable to write into " + out.string()), std::string::npos) << with.err;
  EXPECT_NE(with.err.find("is not writable by a process that gave up root's privileges"), std::string::npos)
      << with.err;
}

// A process whose final dump fails (here EFBIG: it limited its own file
// size after its first checkpoint) keeps its last checkpoint, and its line
// names the failed dump and its errno, not "a raw exit_group, as Go programs
// end, or SIGKILL" (profil run waited for it: it exited, so it was neither).
TEST(RunStatus, FailedFinalDumpIsNamedAsSuch) {
  TempDir dir;
  const Result plain = run({bin("run_status"), "final-dump-fails"}, dir.path());
  ASSERT_EQ(plain.status, 0) << plain.err;
  const Result with = profiled(dir.path(), dir.path() / "out", {bin("run_status"), "final-dump-fails"});
  EXPECT_EQ(with.status, 0) << with.err;
  EXPECT_NE(with.err.find("could not write the profile"), std::string::npos) << with.err;  // the runtime's line
  // Its ledger record says why (issue 32), where only "it could not be
  // written, or ..." could be said before.
  EXPECT_NE(with.err.find("its final dump could not be written (EFBIG (File too large))"), std::string::npos)
      << with.err;
  EXPECT_NE(with.err.find("sampled up to its last checkpoint"), std::string::npos) << with.err;
  EXPECT_EQ(with.err.find("a raw exit_group, as Go programs end, or SIGKILL"), std::string::npos) << with.err;
}

}  // namespace
