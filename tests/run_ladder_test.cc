// The ladder of sources and the lines that say each step (issue 32):
// outside with stacks -> outside with smaller rings -> inside -> nothing,
// each step down one line naming what refused the step above and what the
// user can change (tools/profil/source_ladder.h, outside/perf_source.cc);
// and the messages of refused writes: a full disk says disk full (from
// outside, from inside), a dump the directory refused is never counted as
// killed or ended by a raw exit_group, and a failed write leaves no half
// file.
//
// The rungs are what an unprivileged user meets: the tests run profil as
// nobody (setpriv) with ulimit -l 0, and set kernel.perf_event_mlock_kb
// for the case, restoring it; the disks are small tmpfs mounts. All need
// root, and skip without it, saying why.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "run_support.h"

namespace {

using namespace profil_test;

// kernel.perf_event_mlock_kb set for one test, and put back.
class MlockSetting {
 public:
  explicit MlockSetting(const std::string& kib) : old_(slurp(kPath)) { ok_ = write(kib); }
  ~MlockSetting() {
    if (ok_) write(old_);
  }
  bool ok() const { return ok_; }

 private:
  static constexpr const char* kPath = "/proc/sys/kernel/perf_event_mlock_kb";
  static bool write(const std::string& value) {
    std::ofstream out(kPath);
    out << value;
    out.flush();
    return static_cast<bool>(out);
  }
  std::string old_;
  bool ok_ = false;
};

// argv as nobody, with no memory it may lock beyond the kernel's perf
// allowance (ulimit -l 0).
std::vector<std::string> as_nobody(const std::vector<std::string>& argv) {
  std::vector<std::string> out = {"/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                                  "/bin/sh",          "-c",             "ulimit -l 0 && exec \"$@\"", "sh"};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

// Why an unprivileged user cannot be tried here ("" when it can): the
// tests as root, setpriv, the build readable by nobody, and perf events
// open to a user (kernel.perf_event_paranoid up to 2; above, the first
// rung is perf_event_open's: RunStatus.RefusedPerfEventsMoveTheDefaultInsideAndSayWhy).
std::string nobody_unavailable(const fs::path& dir) {
  if (::geteuid() != 0) return "needs root (setpriv to nobody, sysctl kernel.perf_event_mlock_kb)";
  if (::access("/usr/bin/setpriv", X_OK) != 0) return "no /usr/bin/setpriv";
  const std::string paranoid = slurp("/proc/sys/kernel/perf_event_paranoid");
  if (paranoid.empty() || std::stoi(paranoid) > 2) return "kernel.perf_event_paranoid above 2 refuses a user perf events";
  if (run(as_nobody({bin("profil"), "--version"}), dir).status != 0) return "nobody cannot run " + bin("profil");
  return "";
}

// A directory nobody may write into, under one nobody may pass through.
fs::path nobody_dir(const TempDir& dir) {
  ::chmod(dir.path().c_str(), 0755);
  const fs::path out = dir.path() / "out";
  fs::create_directories(out);
  ::chmod(out.c_str(), 0777);
  return out;
}

TEST(RunLadder, SmallerRingsSayTheirLine) {
  TempDir dir;
  if (const std::string why = nobody_unavailable(dir.path()); !why.empty()) GTEST_SKIP() << why;
  // 516 KiB per CPU: rings of 512 KiB fit on every CPU (129 pages each),
  // the 2048 KiB asked for do not.
  MlockSetting mlock("516");
  ASSERT_TRUE(mlock.ok());
  const fs::path out = nobody_dir(dir);
  const Result r = run(as_nobody({bin("profil"), "run", "-o", out.string(), "--", bin("run_invisible"), "burn", "0.3"}),
                       dir.path(), {"PROFIL_SOURCE=auto"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex("profil: perf rings of [0-9]+ KiB per CPU, not 2048 KiB: .*"
                                                  "kernel.perf_event_mlock_kb \\(516 KiB\\).*ulimit -l \\(0 KiB\\)")))
      << r.err;
  // Still the outside: the step below was not needed.
  EXPECT_NE(r.err.find("from outside)"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("sampling from inside"), std::string::npos) << r.err;
}

// Per-CPU events refused (nobody, kernel.perf_event_paranoid above 0):
// the outside still samples, on per-task events inherited from the
// launched child (issue 32). Told apart by what only per-task events
// give: each ended thread's count at its exit, whose part beyond its
// samples is said ("ended threads not sampled": 200 threads of 3 ms at
// 500 Hz, each a period and a half) — never with root's per-CPU events,
// whose period runs on across the threads.
TEST(RunLadder, PerTaskEventsWherePerCpuOnesAreRefused) {
  TempDir dir;
  if (const std::string why = nobody_unavailable(dir.path()); !why.empty()) GTEST_SKIP() << why;
  if (std::stoi(slurp("/proc/sys/kernel/perf_event_paranoid")) <= 0) GTEST_SKIP() << "nobody may open per-CPU events here";
  const fs::path out = nobody_dir(dir);
  const std::vector<std::string> program = {bin("run_threads"), "many", "200", "0.003"};
  std::vector<std::string> argv = {bin("profil"), "run", "--outside", "-o", out.string(), "--"};
  argv.insert(argv.end(), program.begin(), program.end());
  const Result per_task = run(as_nobody(argv), dir.path());
  EXPECT_EQ(per_task.status, 0) << per_task.err;
  EXPECT_TRUE(std::regex_search(per_task.err, std::regex("run_threads \\(pid [0-9]+\\): [0-9]+ samples \\([^)]*from outside\\)")))
      << per_task.err;
  EXPECT_NE(per_task.err.find(" ended threads not sampled"), std::string::npos) << per_task.err;
  // The rung is said, with the setting that refused it.
  EXPECT_TRUE(std::regex_search(per_task.err, std::regex("profil: sampled on one event per thread and CPU: whole-CPU "
                                                         "events are refused \\(kernel.perf_event_paranoid is [0-9-]+;")))
      << per_task.err;
  const Result per_cpu = run(argv, dir.path());
  EXPECT_EQ(per_cpu.status, 0) << per_cpu.err;
  EXPECT_EQ(per_cpu.err.find(" ended threads not sampled"), std::string::npos) << per_cpu.err;
  EXPECT_EQ(per_cpu.err.find("one event per thread and CPU"), std::string::npos) << per_cpu.err;
}

TEST(RunLadder, UnmappableRingsMoveTheDefaultInsideAndSayWhy) {
  TempDir dir;
  if (const std::string why = nobody_unavailable(dir.path()); !why.empty()) GTEST_SKIP() << why;
  MlockSetting mlock("0");
  ASSERT_TRUE(mlock.ok());
  const fs::path out = nobody_dir(dir);
  const Result plain = run({bin("run_invisible"), "burn", "0.3"}, dir.path());
  const Result r = run(as_nobody({bin("profil"), "run", "-o", out.string(), "--", bin("run_invisible"), "burn", "0.3"}),
                       dir.path(), {"PROFIL_SOURCE=auto"});
  EXPECT_EQ(r.status, plain.status) << r.err;
  // One line: the move, the refusal, both settings with their values, and
  // what to raise.
  EXPECT_TRUE(std::regex_search(r.err, std::regex("profil: sampling from inside \\(the preloaded libprofil.so\\): "
                                                  "sampling from outside is refused here: cannot map a perf ring of "
                                                  "even 64 KiB per CPU \\(EPERM[^\n]*kernel.perf_event_mlock_kb "
                                                  "\\(0 KiB\\)[^\n]*ulimit -l \\(0 KiB\\)[^\n]*raise either")))
      << r.err;
  // And the inside profiled it (before: nothing was).
  EXPECT_TRUE(std::regex_search(r.err, std::regex("run_invisible \\(pid [0-9]+\\): [0-9]+ samples \\([^)]*clock at 500 Hz\\) -> ")))
      << r.err;
  EXPECT_EQ(r.err.find("from outside)"), std::string::npos) << r.err;
}

TEST(RunLadder, AttachSaysWhyTheRingsAreRefusedAndWhatToChange) {
  TempDir dir;
  if (const std::string why = nobody_unavailable(dir.path()); !why.empty()) GTEST_SKIP() << why;
  MlockSetting mlock("0");
  ASSERT_TRUE(mlock.ok());
  const fs::path out = nobody_dir(dir);
  // The target: nobody's, as the user's own program would be.
  const pid_t target = fork();
  if (target == 0) {
    const std::vector<std::string> argv = as_nobody({bin("run_invisible"), "burn", "30"});
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(126);
  }
  ASSERT_GT(target, 0);
  // Attached once it is nobody's run_invisible: before its exec it is
  // still root's, and the refusal would be perf_event_open's (seen beside
  // the full suite's load).
  const std::string exe = "/proc/" + std::to_string(target) + "/exe";
  bool ready = false;
  for (int i = 0; i < 3000 && !ready; ++i) {
    std::error_code ec;
    ready = fs::read_symlink(exe, ec) == fs::canonical(bin("run_invisible"));
    if (!ready) ::usleep(10'000);
  }
  ASSERT_TRUE(ready) << "the target never exec'd " << bin("run_invisible");
  const Result r = run(as_nobody({bin("profil"), "attach", "-o", out.string(), "--duration", "1", std::to_string(target)}),
                       dir.path());
  ::kill(target, SIGKILL);
  ::waitpid(target, nullptr, 0);
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex("profil: attach " + std::to_string(target) +
                                                  ": cannot map a perf ring of even 64 KiB per CPU \\(EPERM[^\n]*"
                                                  "perf_event_mlock_kb \\(0 KiB\\)[^\n]*ulimit -l \\(0 KiB\\); raise "
                                                  "either \\(sysctl kernel.perf_event_mlock_kb=[0-9]+, ulimit -l")))
      << r.err;
}

// A tmpfs of 64 KiB over dir, filled but for `free_kib`; unmounted at the
// end of the test.
class SmallDisk {
 public:
  SmallDisk(const fs::path& dir, unsigned free_kib) : dir_(dir) {
    fs::create_directories(dir);
    mounted_ = ::mount("tmpfs", dir.c_str(), "tmpfs", 0, "size=64k") == 0;
    if (!mounted_) return;
    std::ofstream fill(dir / "fill", std::ios::binary);
    const std::string page(4096, 'x');
    for (unsigned kib = 0; kib + 4 <= 64 - free_kib; kib += 4) fill << page;
    fill.flush();
    // Full to the page: what is left is free_kib, whatever the write said.
  }
  ~SmallDisk() {
    if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
  }
  bool mounted() const { return mounted_; }

  // The directory's entries but the filler: none after a failed write.
  std::vector<std::string> left() const {
    std::vector<std::string> names;
    for (const fs::directory_entry& e : fs::directory_iterator(dir_))
      if (e.path().filename() != "fill") names.push_back(e.path().filename().string());
    return names;
  }

 private:
  fs::path dir_;
  bool mounted_ = false;
};

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += n + " ";
  return out;
}

// Issue 32: "no profile was written: no process of the run ran for a whole
// sampling period" was said of a full disk.
TEST(RunRefusedWrites, FullDiskFromOutsideSaysDiskFullAndLeavesNoHalfFile) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (a tmpfs mount for a full disk)";
  TempDir dir;
  const fs::path out = dir.path() / "full";
  SmallDisk disk(out, 0);
  if (!disk.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here: " << std::strerror(errno);
  const Result r = run({bin("profil"), "run", "--outside", "-o", out.string(), "--", bin("run_invisible"), "burn", "0.3"},
                       dir.path());
  EXPECT_EQ(r.status, 1) << r.err;  // a loss of a program that exited 0
  EXPECT_TRUE(std::regex_search(r.err, std::regex("profil: no profile was written: " + out.string() +
                                                  "/run_invisible\\.[0-9]+\\.pb\\.gz could not be written: ENOSPC "
                                                  "\\(No space left on device\\): the file system of " +
                                                  out.string() + " is full")))
      << r.err;
  EXPECT_EQ(r.err.find("sampling period"), std::string::npos) << r.err;
  EXPECT_TRUE(disk.left().empty()) << joined(disk.left());
}

// The same from inside: the program's final dump refused. Its ledger record
// says why (4 KiB left: the ledger's page), or, where even the ledger was
// refused, the directory does; never "killed by a signal, or a raw
// exit_group".
TEST(RunRefusedWrites, FullDiskFromInsideSaysTheWriteWasRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (a tmpfs mount for a full disk)";
  for (const unsigned free_kib : {4u, 0u}) {
    SCOPED_TRACE(std::to_string(free_kib) + " KiB free");
    TempDir dir;
    const fs::path out = dir.path() / "full";
    SmallDisk disk(out, free_kib);
    if (!disk.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here: " << std::strerror(errno);
    const Result r = run({bin("profil"), "run", "--inside", "-o", out.string(), "--", "/bin/sh", "-c",
                          bin("run_invisible") + " burn 0.2; " + bin("run_invisible") + " burn 0.2"},
                         dir.path());
    EXPECT_EQ(r.status, 1) << r.err;
    // The runtime's own line, then profil run's for each process.
    EXPECT_NE(r.err.find("could not write the profile (no space left on device)"), std::string::npos) << r.err;
    const std::string said = free_kib > 0 ? ": its profile could not be written into " + out.string() + ": ENOSPC"
                                          : ": wrote no profile, and " + out.string() + " refuses new files now \\(ENOSPC";
    // With no room for the ledger's record, the processes the run did not
    // start itself leave profil run nothing to go by: the program is said.
    const std::string who = free_kib > 0 ? "run_invisible" : "sh";
    EXPECT_TRUE(std::regex_search(r.err, std::regex(who + " \\(pid [0-9]+\\)" + said))) << r.err;
    EXPECT_EQ(r.err.find("exit_group"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("killed by a signal"), std::string::npos) << r.err;
    EXPECT_TRUE(disk.left().empty()) << joined(disk.left());
  }
}

// A directory that refuses the dump (here the program made it read-only
// for its own user): the write refused and why, from the ledger's record.
TEST(RunRefusedWrites, RefusedWriteFromInsideIsNotAKill) {
  TempDir dir;
  if (const std::string why = nobody_unavailable(dir.path()); !why.empty()) GTEST_SKIP() << why;
  const fs::path out = dir.path() / "own";
  fs::create_directories(out);
  ::chmod(dir.path().c_str(), 0755);
  ASSERT_EQ(::chown(out.c_str(), 65534, 65534), 0);
  const Result r = run(as_nobody({bin("profil"), "run", "--inside", "-o", out.string(), "--", "/bin/sh", "-c",
                                  "chmod 555 " + out.string() + " && exec " + bin("run_invisible") + " burn 0.3"}),
                       dir.path());
  ::chmod(out.c_str(), 0755);
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find("its profile could not be written into " + out.string() + ": EACCES (Permission denied)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("exit_group"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("killed by"), std::string::npos) << r.err;
}

}  // namespace
