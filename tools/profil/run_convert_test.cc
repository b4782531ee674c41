// ProfileSinks::renew_symbolizer (issue 32: hours of --every snapshots get
// a new symbolizer after each minute of windows, so that profil's memory
// stays flat): the windows after it are named as before, and the run's
// carry of unsampled time is kept across it.
#include "run_convert.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "format/file_io.h"
#include "format/pprof.h"
#include "format/pprof_gzip.h"

namespace profiling::cli {
namespace {

namespace fs = std::filesystem;

__attribute__((noinline)) int sampled_function(int x) {
  asm volatile("" : "+r"(x));
  return x * 3 + 1;
}

// This test binary's executable mapping, from /proc/self/maps.
format::Mapping own_text() {
  const std::string exe = fs::read_symlink("/proc/self/exe").string();
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    std::istringstream fields(line);
    std::string range, perms, offset, device, inode, path;
    fields >> range >> perms >> offset >> device >> inode >> path;
    if (path != exe || perms.find('x') == std::string::npos) continue;
    format::Mapping m;
    m.start = std::stoull(range.substr(0, range.find('-')), nullptr, 16);
    m.limit = std::stoull(range.substr(range.find('-') + 1), nullptr, 16);
    m.file_offset = std::stoull(offset, nullptr, 16);
    m.path = exe;
    return m;
  }
  return {};
}

// One window of this process: 10 samples in sampled_function, and 0.6 of
// a period of CPU time no sample caught.
ProcessProfile window(int n) {
  ProcessProfile p;
  format::Profile& profile = p.data.profile;
  profile.program = fs::read_symlink("/proc/self/exe").string();
  profile.pid = ::getpid();
  profile.clock = "perf";
  profile.period_ns = 1'000'000;
  p.data.hz = 1000;
  p.data.end_reason = format::profraw::EndReason::checkpoint;
  profile.mappings.push_back(own_text());
  format::Sample s;
  s.address = reinterpret_cast<uint64_t>(&sampled_function);
  s.count = 10;
  profile.samples.push_back(s);
  format::profraw::Unsampled u{};
  u.cause = static_cast<uint32_t>(format::profraw::UnsampledCause::ring_full);
  u.cpu_ns = 600'000;
  p.data.unsampled.push_back(u);
  p.stem = "test.s" + std::to_string(n);
  return p;
}

format::Profile read_back(const fs::path& path) {
  return format::decode_pprof(format::gunzip(format::read_file(path.string())));
}

TEST(ProfileSinks, RenewedSymbolizerNamesTheNextWindowsAndKeepsTheCarry) {
  ASSERT_FALSE(own_text().path.empty());
  char dir_template[] = "/tmp/profil-sinks-XXXXXX";
  const fs::path dir = ::mkdtemp(dir_template);
  ConvertOptions options;
  options.share = false;
  options.dir = dir;
  ProfileSinks sinks(options);
  sinks.add(window(1));
  ASSERT_TRUE(sinks.finish().losses.empty());
  sinks.renew_symbolizer();
  sinks.add(window(2));
  ASSERT_TRUE(sinks.finish().losses.empty());
  for (const char* name : {"test.s1.pb.gz", "test.s2.pb.gz"}) {
    const format::Profile profile = read_back(dir / name);
    const auto* frames = profile.frames_for(reinterpret_cast<uint64_t>(&sampled_function));
    ASSERT_NE(frames, nullptr) << name;
    ASSERT_FALSE(frames->empty()) << name;
    EXPECT_NE(frames->front().function.find("sampled_function"), std::string::npos) << name;
  }
  // 0.6 + 0.6 periods not sampled: the first window's part carried to the
  // second, which then counts one whole period (a renewal that dropped
  // the carry would count none).
  EXPECT_EQ(read_back(dir / "test.s1.pb.gz").total_count(), 10u);
  EXPECT_EQ(read_back(dir / "test.s2.pb.gz").total_count(), 11u);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace profiling::cli
