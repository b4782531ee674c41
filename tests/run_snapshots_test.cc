// profil run --inside --every (issue 21): snapshots from inside, asked of
// each process through a file (runtime/snapshot_request.h), never a
// signal, that add up to the whole run as the outside's do
// (outside_test.cc, Outside.SnapshotsAddUpToTheWholeRun).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "format/file_io.h"
#include "format/pprof.h"
#include "format/profile.h"
#include "run_support.h"

namespace {

using namespace profil_test;
namespace format = profiling::format;

constexpr int kHz = 1000;

// "cpu 1.6" in the target's output.
std::optional<double> cpu_of(const std::string& out) {
  std::smatch m;
  if (!std::regex_search(out, m, std::regex("(^|\\n)cpu ([0-9.]+)"))) return std::nullopt;
  return std::stod(m[2]);
}

TEST(InsideSnapshots, AddUpToTheWholeRunAndTouchNoSignal) {
  TempDir dir;
  const Result r = run({bin("profil"), "run", "--inside", "--every", "0.4s", "--hz", std::to_string(kHz), "-o",
                        dir.path().string(), "--", bin("outside_target"), "spin", "1.6"},
                       dir.path());
  ASSERT_EQ(r.status, 0) << r.err;
  const auto cpu = cpu_of(r.out);
  ASSERT_TRUE(cpu) << r.out;
  uint64_t samples = 0;
  std::vector<int64_t> starts;
  size_t files = 0;
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    const std::string name = entry.path().filename().string();
    if (!name.ends_with(".pb.gz")) continue;
    // Snapshots only: no whole-run file beside them, as from outside.
    EXPECT_TRUE(std::regex_match(name, std::regex("outside_target\\.[0-9]+\\.s[0-9]+\\.pb\\.gz"))) << name;
    const format::Profile p = format::decode_pprof(format::read_file(entry.path().string()));
    ++files;
    EXPECT_GT(p.time_nanos, 0) << name;
    EXPECT_GT(p.duration_ns, 0u) << name;
    starts.push_back(p.time_nanos);
    for (const auto& s : p.samples) samples += s.count;
  }
  // 1.6 s of CPU asked for every 0.4 s of wall time: four intervals at
  // least on an idle machine; a busy one stretches the run and adds more.
  EXPECT_GE(files, 3u) << r.err;
  std::sort(starts.begin(), starts.end());
  EXPECT_EQ(std::unique(starts.begin(), starts.end()), starts.end()) << "two snapshots of one interval";
  // Every period of the process's CPU time is in exactly one snapshot
  // (samples and unsampled rows): none lost between two, none twice.
  const double expected = *cpu * kHz;
  EXPECT_NEAR(static_cast<double>(samples), expected, 0.05 * expected + 5 * std::sqrt(expected)) << r.err;
  // The request file is the tool's, and gone with the run.
  for (const auto& entry : fs::directory_iterator(dir.path()))
    EXPECT_EQ(entry.path().filename().string().find("request"), std::string::npos) << entry.path();
}

TEST(InsideSnapshots, DurationStillNeedsTheOutside) {
  TempDir dir;
  const Result r = run({bin("profil"), "run", "--inside", "--duration", "1s", "-o", dir.path().string(), "--",
                        bin("outside_target"), "spin", "0.1"},
                       dir.path());
  EXPECT_EQ(r.status, 125) << r.err;
  EXPECT_NE(r.err.find("--duration"), std::string::npos) << r.err;
}

}  // namespace
