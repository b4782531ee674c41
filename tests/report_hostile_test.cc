// `profil report` on hostile inputs (issue 11): every read bounded, every
// path a profile names opened only if it is a regular file, patterns that
// cannot crash, counts that saturate instead of wrapping. Each case runs the
// real binary as a child and checks its exit status, its stderr and its
// peak memory (wait4's ru_maxrss). alarm() in the child only guards against
// a hang; no assertion depends on time.
//
// PROFIL_HOSTILE_KEEP=DIR keeps the generated inputs there (for measuring
// the old and new binaries by hand: docs/report.md's table).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "format/file_io.h"
#include "format/gmon.h"
#include "format/pprof.h"
#include "format/profile.h"

namespace {

namespace fs = std::filesystem;
using namespace profiling;

struct Result {
  int status = -1;  // wait status
  std::string out, err;
  uint64_t max_rss_bytes = 0;
  bool exited(int code) const { return WIFEXITED(status) && WEXITSTATUS(status) == code; }
  bool failed_cleanly() const { return WIFEXITED(status) && WEXITSTATUS(status) != 0; }
  size_t err_lines() const { return static_cast<size_t>(std::count(err.begin(), err.end(), '\n')); }
};

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class HostileReport : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* build = std::getenv("PROFIL_BUILD_DIR");
    ASSERT_NE(build, nullptr);
    profil_ = std::string(build) + "/bin/profil";
    if (const char* keep = std::getenv("PROFIL_HOSTILE_KEEP")) {
      dir_ = keep;
      keep_ = true;
      fs::create_directories(dir_);
    } else {
      char pattern[] = "/tmp/profil-hostile-XXXXXX";
      ASSERT_NE(mkdtemp(pattern), nullptr);
      dir_ = pattern;
    }
  }
  void TearDown() override {
    std::error_code ignored;
    if (!keep_ && !dir_.empty()) fs::remove_all(dir_, ignored);
  }

  // Runs profil with args; stdout and stderr to files, the peak RSS of that
  // one child from wait4.
  Result run(const std::vector<std::string>& args) {
    Result result;
    std::string out = dir_ + "/stdout", err = dir_ + "/stderr";
    pid_t pid = fork();
    if (pid == 0) {
      int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      dup2(o, 1);
      dup2(e, 2);
      setenv("NO_COLOR", "1", 1);
      alarm(120);  // a hang guard only: the old reader of a FIFO never returned
      std::vector<char*> argv = {const_cast<char*>(profil_.c_str())};
      for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    struct rusage usage {};
    EXPECT_EQ(wait4(pid, &result.status, 0, &usage), pid);
    result.max_rss_bytes = static_cast<uint64_t>(usage.ru_maxrss) * 1024;
    result.out = slurp(out);
    result.err = slurp(err);
    return result;
  }

  // Runs make (which writes an input) in a child process: a forked child
  // starts with its parent's resident pages, and exec keeps that peak in
  // ru_maxrss, so the test process must stay small for run() to measure
  // profil alone.
  template <typename Make>
  void make_in_child(Make make) {
    pid_t pid = fork();
    if (pid == 0) {
      try {
        make();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "%s\n", e.what());
        _exit(1);
      }
      _exit(0);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }

  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  std::string profil_, dir_;
  bool keep_ = false;
};

// The bound: 200 MB, or 24 bytes per non-zero bin or location
// really present, whichever is larger.
uint64_t memory_limit(uint64_t present) { return std::max<uint64_t>(200'000'000, 24 * present); }

TEST_F(HostileReport, DevZeroIsRefusedInOneLine) {
  Result r = run({"report", "/dev/zero"});
  EXPECT_TRUE(r.failed_cleanly()) << r.status;
  EXPECT_EQ(r.err_lines(), 1u) << r.err;
  EXPECT_NE(r.err.find("/dev/zero: not a regular file"), std::string::npos) << r.err;
  EXPECT_LT(r.max_rss_bytes, memory_limit(0));
}

TEST_F(HostileReport, FifoArgumentIsRefusedInOneLine) {
  std::string fifo = path("fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  Result r = run({"report", fifo});
  EXPECT_TRUE(r.failed_cleanly()) << r.status;
  EXPECT_EQ(r.err_lines(), 1u) << r.err;
  EXPECT_NE(r.err.find(fifo + ": not a regular file (a FIFO)"), std::string::npos) << r.err;
}

// 1.5 GiB that parse as profile.proto (empty sample_type messages, bytes
// 0a 00) in 1.6 MB of gzip (1536 gzip members of 1 MiB each: gunzip reads
// them as one stream): refused, without inflating it into memory (the old
// reader peaked at 2.1 GB). Zeros are refused sooner still.
TEST_F(HostileReport, GzipBombIsRefusedWithBoundedMemory) {
  std::string bomb = path("bomb.pb.gz");
  std::vector<unsigned char> zeros(1 << 20, 0), member(1 << 16);
  for (size_t i = 0; i < zeros.size(); i += 2) zeros[i] = 0x0a;
  z_stream stream{};
  ASSERT_EQ(deflateInit2(&stream, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY), Z_OK);
  stream.next_in = zeros.data();
  stream.avail_in = static_cast<uInt>(zeros.size());
  stream.next_out = member.data();
  stream.avail_out = static_cast<uInt>(member.size());
  ASSERT_EQ(deflate(&stream, Z_FINISH), Z_STREAM_END);
  member.resize(stream.total_out);
  deflateEnd(&stream);
  std::string bytes;
  for (int i = 0; i < 1536; ++i) bytes.append(member.begin(), member.end());
  format::write_file_atomically(bomb, bytes);
  Result r = run({"report", bomb});
  EXPECT_TRUE(r.failed_cleanly()) << r.status;
  EXPECT_EQ(r.err_lines(), 1u) << r.err;
  EXPECT_NE(r.err.find(bomb + ": "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("inflates to more than 1 GiB"), std::string::npos) << r.err;
  EXPECT_LT(r.max_rss_bytes, memory_limit(0)) << "peak RSS " << r.max_rss_bytes;

  zeros.assign(zeros.size(), 0);
  std::string gz = bomb + ".gz";
  gzFile out = gzopen(gz.c_str(), "wb1");
  ASSERT_NE(out, nullptr);
  for (int i = 0; i < 64; ++i) ASSERT_EQ(gzwrite(out, zeros.data(), static_cast<unsigned>(zeros.size())), 1 << 20);
  ASSERT_EQ(gzclose(out), Z_OK);
  Result z = run({"report", gz});
  EXPECT_TRUE(z.failed_cleanly()) << z.status;
  EXPECT_EQ(z.err_lines(), 1u) << z.err;
  EXPECT_NE(z.err.find(gz + ": "), std::string::npos) << z.err;
  EXPECT_LT(z.max_rss_bytes, memory_limit(0)) << "peak RSS " << z.max_rss_bytes;
}

// A GNU gmon.out of 4 M non-zero bins (8 MiB): the old report took 1.25 GB.
TEST_F(HostileReport, GmonOfManyBinsCostsLinearMemory) {
  constexpr uint32_t kBins = 4u << 20;
  std::string gmon = path("gmon.out");
  make_in_child([&] {
    format::GmonData data;
    format::GmonHistogram h;
    h.low_pc = 0x10000;
    h.high_pc = h.low_pc + 4ull * kBins;
    h.rate_hz = 100;
    h.bins.assign(kBins, 1);
    data.histograms.push_back(std::move(h));
    format::write_file_atomically(gmon, format::encode_gmon(data));
  });
  Result r = run({"report", "--exe", path("no-such-program"), gmon});
  EXPECT_TRUE(r.exited(0)) << r.status << r.err;
  EXPECT_NE(r.out.find(std::to_string(kBins) + " samples"), std::string::npos) << r.out;
  EXPECT_LT(r.max_rss_bytes, memory_limit(kBins)) << "peak RSS " << r.max_rss_bytes;
}

// 10^6 pprof locations (one sample each, every tenth named by a function):
// the old report took 439 MB.
TEST_F(HostileReport, PprofOfAMillionLocationsCostsLinearMemory) {
  constexpr uint64_t kLocations = 1'000'000;
  std::string pprof = path("million.pb.gz");
  make_in_child([&] {
    format::Profile p;
    p.period_ns = 1'000'000;
    p.mappings.push_back({0x400000, 0x400000 + 16 * kLocations, 0, path("no-such-program"), ""});
    p.samples.reserve(kLocations);
    for (uint64_t i = 0; i < kLocations; ++i) {
      uint64_t address = 0x400000 + 16 * i;
      p.samples.push_back({address, 1 + i % 7});
      if (i % 10 == 0) p.frames[address] = {{"function_" + std::to_string(i / 10), "", "file.c", 1}};
    }
    format::write_file_atomically(pprof, format::encode_pprof(p));
  });
  Result r = run({"report", "--top", "5", pprof});
  EXPECT_TRUE(r.exited(0)) << r.status << r.err;
  EXPECT_LT(r.max_rss_bytes, memory_limit(kLocations)) << "peak RSS " << r.max_rss_bytes;
}

// 100,000 samples of depth 128 (12.8 million frames in the file, 38 MB
// inflated) over 4,000 distinct caller chains: each chain is stored (and
// named) once, so report, folded stacks and merge of two copies stay within
// the bound; a copy of each sample's frames would take 102 MB per input,
// and the merge's pprof message held whole another 205 MB.
TEST_F(HostileReport, ManyDeepStacksCostTheirDistinctFramesOnce) {
  constexpr uint64_t kLocations = 20'000, kChains = 4'000, kLeaves = 25, kDepth = 128;
  std::string pprof = path("deep.pb.gz");
  make_in_child([&] {
    format::Profile p;
    p.period_ns = 1'000'000;
    p.mappings.push_back({0x400000, 0x400000 + 16 * kLocations, 0, path("no-such-program"), ""});
    for (uint64_t k = 0; k < kLocations; ++k) p.frames[0x400000 + 16 * k] = {{"f" + std::to_string(k), "", "", 0}};
    std::vector<uint32_t> chains;
    std::vector<uint64_t> callers(kDepth - 1);
    for (uint64_t c = 0; c < kChains; ++c) {
      for (uint64_t d = 0; d < callers.size(); ++d)
        callers[d] = 0x400000 + 16 * (kLeaves + (c * 7919 + d * 104729) % (kLocations - kLeaves));
      chains.push_back(p.stacks.intern(callers, c % 5 == 0));
    }
    for (uint64_t leaf = 0; leaf < kLeaves; ++leaf)
      for (uint64_t c = 0; c < kChains; ++c) p.samples.push_back({0x400000 + 16 * leaf, 1 + c % 3, 0, chains[c]});
    format::write_file_atomically(pprof, format::encode_pprof(p));
  });
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"report", "--top", "5", pprof},
        std::vector<std::string>{"report", "--format", "folded", "-o", path("deep.folded"), pprof},
        std::vector<std::string>{"merge", "-o", path("sum.pb.gz"), pprof, pprof}}) {
    Result r = run(args);
    EXPECT_TRUE(r.exited(0)) << args[1] << ": " << r.status << r.err;
    EXPECT_LT(r.max_rss_bytes, memory_limit(kLocations)) << args[1] << " " << args.back() << ": peak RSS " << r.max_rss_bytes;
    std::fprintf(stderr, "%s %s: peak RSS %.1f MB\n", args[0].c_str(), args[2].c_str(), r.max_rss_bytes / 1e6);
  }
  // Every sample is a stack of its own in the folded output (names differ).
  const std::string folded = slurp(path("deep.folded"));
  EXPECT_EQ(static_cast<uint64_t>(std::count(folded.begin(), folded.end(), '\n')), kLeaves * kChains);
  uint64_t truncated = 0;
  for (size_t at = 0; at < folded.size(); at = folded.find('\n', at) + 1) truncated += folded.compare(at, 12, "[truncated];") == 0;
  EXPECT_EQ(truncated, kLeaves * kChains / 5);
}

// A mapping whose file is a FIFO: the symbolizer used to open it and wait
// for a writer forever. Now it is not an object: a warning, [unknown].
TEST_F(HostileReport, MappingNamedByAFifoIsNotOpened) {
  std::string fifo = path("object-fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  format::Profile p;
  p.mappings.push_back({0x400000, 0x500000, 0, fifo, ""});
  p.samples.push_back({0x400100, 5});
  std::string pprof = path("fifo-mapping.pb.gz");
  format::write_file_atomically(pprof, format::encode_pprof(p));
  Result r = run({"report", pprof});
  EXPECT_TRUE(r.exited(0)) << r.status << r.err;
  EXPECT_NE(r.err.find(fifo + ": not a regular file"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("[unknown]"), std::string::npos) << r.out;
}

// --focus '(a|b)*c' against a 20,000-character name: std::regex recursed
// once per character and died of SIGSEGV.
TEST_F(HostileReport, FocusOnALongNameDoesNotCrash) {
  std::string long_name(20000, 'a');
  for (size_t i = 1; i < long_name.size(); i += 2) long_name[i] = 'b';
  format::Profile p;
  p.mappings.push_back({0x400000, 0x500000, 0, path("no-such-program"), ""});
  p.samples.push_back({0x400100, 5});
  p.samples.push_back({0x400200, 3});
  p.frames[0x400100] = {{long_name, "", "", 0}};
  p.frames[0x400200] = {{long_name + "c", "", "", 0}};
  std::string pprof = path("long-name.pb.gz");
  format::write_file_atomically(pprof, format::encode_pprof(p));
  Result r = run({"report", "--focus", "(a|b)*c", pprof});
  ASSERT_TRUE(r.exited(0)) << r.status << r.err;
  // Only the name with the c matches; its share stays 3 of 8.
  EXPECT_NE(r.out.find("37.50%"), std::string::npos) << r.out.substr(0, 400);
  EXPECT_EQ(r.out.find("62.50%"), std::string::npos);

  Result bad = run({"report", "--focus", "(a|b", pprof});
  EXPECT_TRUE(bad.failed_cleanly()) << bad.status;
  EXPECT_EQ(bad.err_lines(), 1u) << bad.err;
  EXPECT_NE(bad.err.find("--focus: bad regular expression: "), std::string::npos) << bad.err;
}

// Three profiles whose counts at one address sum past 2^64: the total and
// the row stay at 2^64-1 and one warning line says so (the old report
// printed the wrapped sum).
TEST_F(HostileReport, CountsSaturateAndSaySo) {
  std::vector<std::string> args = {"report"};
  for (int i = 0; i < 3; ++i) {
    format::Profile p;
    p.period_ns = 1;  // the CPU time (count * period) must fit too
    p.mappings.push_back({0x400000, 0x500000, 0, path("no-such-program"), ""});
    p.samples.push_back({0x400100, uint64_t{INT64_MAX}});
    std::string pprof = path("huge" + std::to_string(i) + ".pb.gz");
    format::write_file_atomically(pprof, format::encode_pprof(p));
    args.push_back(pprof);
  }
  Result r = run(args);
  ASSERT_TRUE(r.exited(0)) << r.status << r.err;
  EXPECT_NE(r.out.find("18446744073709551615 samples"), std::string::npos) << r.out;
  size_t warnings = 0;
  for (size_t at = r.err.find("saturated"); at != std::string::npos; at = r.err.find("saturated", at + 1)) ++warnings;
  EXPECT_EQ(warnings, 1u) << r.err;

  // profil merge still refuses: a merged file must hold the true sums.
  std::vector<std::string> merge = {"merge", "-o", path("merged.pb.gz")};
  merge.insert(merge.end(), args.begin() + 1, args.end());
  Result m = run(merge);
  EXPECT_TRUE(m.failed_cleanly()) << m.status;
  EXPECT_FALSE(fs::exists(path("merged.pb.gz")));
}

// `profil run --convert` (issue 11, case 13): a missing file is named once,
// and a writer's leftover "X.profraw.tmp.PID" becomes X.pb.gz.
TEST_F(HostileReport, ConvertNamesFilesOnceAndDropsTheTemporarySuffix) {
  Result missing = run({"run", "--convert", path("gone.profraw")});
  EXPECT_TRUE(missing.failed_cleanly()) << missing.status;
  std::string name = path("gone.profraw");
  size_t first = missing.err.find(name);
  ASSERT_NE(first, std::string::npos) << missing.err;
  EXPECT_EQ(missing.err.find(name, first + 1), std::string::npos) << missing.err;

  const char* build = std::getenv("PROFIL_BUILD_DIR");
  std::string maker = std::string(build) + "/bin/report_make_profile";
  std::string fixture = std::string(build) + "/tests/report_fixtures/report_fixture_pie";
  std::string leftover = path("prog.123.profraw.tmp.456");
  int status = std::system(("'" + maker + "' '" + leftover + "' '" + fixture + "' hot_inner=10 >/dev/null").c_str());
  ASSERT_EQ(status, 0);
  Result converted = run({"run", "--convert", leftover});
  EXPECT_TRUE(converted.exited(0)) << converted.status << converted.err;
  EXPECT_TRUE(fs::exists(path("prog.123.pb.gz"))) << converted.err;
  EXPECT_FALSE(fs::exists(path("prog.123.profraw.tmp.pb.gz")));
}

}  // namespace
