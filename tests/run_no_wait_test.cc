// profil run --no-wait (issue 21, "Daemons"): the tool returns when the
// program ends, with its status; what the program left running goes on
// being profiled — sampled from outside by a copy of the tool until it
// ends, or writing its dump from inside for profil run --convert DIR.
//
// Nothing here waits on timing: the daemon (tests/run_progs/run_daemon.c)
// waits for a file this test creates once profil run has returned, so a
// tool that waited for it would never return (the daemon gives up after 2
// minutes and the test fails), and its profile cannot exist before then.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "run_support.h"

namespace profil_test {
namespace {

constexpr int kHz = 1000;

// Waits (up to 2 minutes, in 20 ms steps) for a path to appear: for an
// event that must come, not for one that should come soon.
bool appears(const fs::path& path) {
  for (int i = 0; i < 6000; ++i) {
    if (fs::exists(path)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// Samples of `file` whose stack holds `function`, from its folded stacks.
uint64_t samples_under(const fs::path& file, const std::string& function) {
  const Result r = run({bin("profil"), "report", "--format", "folded", file.string()}, file.parent_path());
  EXPECT_EQ(r.status, 0) << r.err;
  uint64_t n = 0;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    const size_t space = line.rfind(' ');
    if (space == std::string::npos) continue;
    const std::string stack = ";" + line.substr(0, space) + ";";
    if (stack.find(";" + function + ";") != std::string::npos) n += std::stoull(line.substr(space + 1));
  }
  return n;
}

// CPU seconds burnt, in samples at kHz: within 5 binomial sigmas and a
// tenth for start-up and kernel time outside the function.
void expect_about(uint64_t samples, double seconds, const std::string& what) {
  const double expected = seconds * kHz;
  const double sigma = std::sqrt(expected);
  EXPECT_GE(static_cast<double>(samples), 0.9 * expected - 5 * sigma) << what;
  EXPECT_LE(static_cast<double>(samples), 1.1 * expected + 5 * sigma) << what;
}

class NoWait : public ::testing::TestWithParam<std::string> {};

TEST_P(NoWait, ReturnsWithTheProgramAndProfilesItsDaemonUntilItEnds) {
  const std::string source = GetParam();
  TempDir dir;
  const fs::path out = dir.path() / "out", ctl = dir.path() / "ctl";
  fs::create_directories(ctl);
  const Result r = run({bin("profil"), "run", "--" + source, "--no-wait", "--hz", std::to_string(kHz), "-o",
                        out.string(), "--", bin("run_daemon"), ctl.string()},
                       dir.path());
  if (source == "outside" && r.err.find("ran unprofiled") != std::string::npos)
    GTEST_SKIP() << "perf events refused: " << r.err;
  // The program's status, while its daemon still waits for the go.
  EXPECT_EQ(r.status, 3) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("daemon ([0-9]+)"))) << r.out;
  const pid_t daemon = std::stoi(m[1]);
  EXPECT_NE(r.err.find("not waiting (--no-wait) for the 1 process it left running: run_daemon (pid " +
                       std::to_string(daemon) + ")"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(ctl / "done")) << "the daemon ended before profil run returned";
  const std::string stem = "run_daemon." + std::to_string(daemon);
  ASSERT_FALSE(fs::exists(out / (stem + ".pb.gz"))) << r.err;
  // The program's own profile is written already.
  bool program_profile = false;
  for (const auto& entry : fs::directory_iterator(out))
    if (entry.path().extension() == ".gz" && samples_under(entry.path(), "main_burn") > 0) program_profile = true;
  EXPECT_TRUE(program_profile) << r.err;

  std::ofstream(ctl / "go").put('\n');
  ASSERT_TRUE(appears(ctl / "done")) << "the daemon never ended";
  if (source == "inside") {
    // Its dump, written at its exit, becomes a profile with --convert DIR.
    fs::path dump;
    for (int i = 0; i < 6000 && dump.empty(); ++i) {
      for (const auto& entry : fs::directory_iterator(out))
        if (entry.path().extension() == ".profraw" && entry.path().filename().string().rfind(stem + ".", 0) == 0)
          dump = entry.path();
      if (dump.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ASSERT_FALSE(dump.empty()) << "no dump of the daemon in " << out;
    const Result convert = run({bin("profil"), "run", "--convert", out.string()}, dir.path());
    ASSERT_EQ(convert.status, 0) << convert.err;
  }
  // From outside, the copy of the tool writes it once the daemon has ended.
  ASSERT_TRUE(appears(out / (stem + ".pb.gz"))) << r.err;
  expect_about(samples_under(out / (stem + ".pb.gz"), "daemon_burn"), 0.4, "the daemon's two burns");
}

INSTANTIATE_TEST_SUITE_P(Sources, NoWait, ::testing::Values("outside", "inside"),
                         [](const auto& info) { return info.param; });

// --convert DIR takes the directory's dumps; a directory without any is
// said, and is not an error.
TEST(ConvertDirectory, EmptyDirectoryIsSaid) {
  TempDir dir;
  const Result r = run({bin("profil"), "run", "--convert", dir.path().string()}, dir.path());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find(dir.path().string() + ": no .profraw dumps in it"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace profil_test
