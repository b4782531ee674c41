// Profil's own work out of the program's profile (issue 22), end to end:
// on the inside perf clock at 4 kHz the kernel samples libprofil itself
// (the ring's drain in its handler, the dump at exit; 65 of 3,581 samples
// of this workload, 1,002 of 16,387 for python3). Those samples are
// counted apart by `profil run`'s conversion: the file holds none (no row
// of any report, nor of go tool pprof, names libprofil.so), its
// "profil.own_samples" comment holds their count, and every report header
// names it.
//
// The dump is kept by preloading libprofil.so directly (PROFIL_RUN_DIR, as
// bench/unwind.sh does) and read with the project's reader before `profil
// run --convert` converts it: nothing is lost (the file's samples and the
// own ones add up to the dump's), every sample whose leaf is in libprofil
// is among the own ones, and only samples with a libprofil frame are
// (threads start in libprofil's trampoline: theirs stay the program's,
// their stacks without libprofil's frames).
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "format/file_io.h"
#include "format/pprof.h"
#include "format/profile.h"
#include "format/profraw.h"
#include "run_support.h"

namespace {

using namespace profil_test;
namespace format = profiling::format;

bool in_libprofil(const format::Profile& p, uint64_t address) {
  const format::Mapping* m = p.mapping_for(address);
  return m != nullptr && fs::path(m->path).filename().string().starts_with("libprofil.so");
}

TEST(OwnSamples, ProfilsOwnCodeIsCountedApartAndNamedInTheHeader) {
  TempDir dir;
  const fs::path raw = dir.path() / "raw";
  fs::create_directories(raw);
  const Result ran = run({bin("run_threads"), "threads", "0.3", "0.6"}, dir.path(),
                         {"LD_PRELOAD=" + build_dir() + "/lib/libprofil.so", "PROFIL_RUN_DIR=" + raw.string(),
                          "PROFIL_HZ=4000", "PROFIL_CLOCK=perf", "PROFIL_STACKS=1"});
  ASSERT_EQ(ran.status, 0) << ran.err;
  std::vector<fs::path> dumps;
  for (const auto& entry : fs::directory_iterator(raw))
    if (entry.path().extension() == ".profraw") dumps.push_back(entry.path());
  ASSERT_EQ(dumps.size(), 1u) << ran.err;
  const format::ProfrawData data = format::read_profraw(slurp(dumps[0]));
  if (data.profile.clock != "perf") GTEST_SKIP() << "no perf events here: sampled on " << data.profile.clock;

  // The dump: samples whose leaf is in libprofil (profil's for certain), and
  // those with a libprofil frame anywhere (at most profil's).
  uint64_t total = 0, leaf_ours = 0, any_ours = 0;
  for (const format::Sample& s : data.profile.samples) {
    total += s.count;
    bool ours = in_libprofil(data.profile, s.address);
    if (ours) leaf_ours += s.count;
    for (const uint64_t frame : data.profile.stacks.callers(s.stack)) ours = ours || in_libprofil(data.profile, frame);
    if (ours) any_ours += s.count;
  }
  ASSERT_GT(leaf_ours, 0u) << "libprofil's own code was not sampled: " << total << " samples";

  const Result converted = run({bin("profil"), "run", "--convert", raw.string()}, dir.path());
  ASSERT_EQ(converted.status, 0) << converted.err;
  const fs::path file = raw / (dumps[0].stem().string() + ".pb.gz");
  const format::Profile p = format::decode_pprof(format::read_file(file.string()));
  uint64_t kept = 0;
  for (const format::Sample& s : p.samples) {
    if (s.address >= format::kUnsampledAddressBase) continue;  // [unsampled: ...] rows
    kept += s.count;
    EXPECT_FALSE(in_libprofil(p, s.address)) << std::hex << s.address;
    for (const uint64_t frame : p.stacks.callers(s.stack)) EXPECT_FALSE(in_libprofil(p, frame)) << std::hex << frame;
  }
  EXPECT_EQ(kept + p.own_samples, total);
  EXPECT_GE(p.own_samples, leaf_ours);
  EXPECT_LE(p.own_samples, any_ours);
  // The worker threads' samples (under libprofil's thread trampoline) stay.
  EXPECT_GT(kept, any_ours - p.own_samples);
  EXPECT_NE(converted.err.find(std::to_string(p.own_samples) + " more in profil's own code left out"),
            std::string::npos)
      << converted.err;

  // Every report: no row of libprofil, the count in the header.
  const std::string own = std::to_string(p.own_samples);
  for (const char* view : {"function", "object"}) {
    const Result text = run({bin("profil"), "report", "--by", view, file.string()}, dir.path());
    ASSERT_EQ(text.status, 0) << text.err;
    EXPECT_EQ(text.out.find("libprofil"), std::string::npos) << text.out;
    EXPECT_TRUE(std::regex_search(text.out, std::regex("; " + own +
                                                       " samples \\([0-9.]+%\\) in profil's own code \\(its "
                                                       "handler, its dump\\) are left out\n")))
        << text.out;
  }
  const Result json = run({bin("profil"), "report", "--format", "json", file.string()}, dir.path());
  ASSERT_EQ(json.status, 0) << json.err;
  EXPECT_NE(json.out.find("\"profil_own_samples\":" + own + ","), std::string::npos) << json.out.substr(0, 600);
  const Result html = run({bin("profil"), "report", "--format", "html", file.string()}, dir.path());
  ASSERT_EQ(html.status, 0) << html.err;
  EXPECT_NE(html.out.find("<p id=\"profil-own\">" + own + " samples ("), std::string::npos);
  const Result tree = run({bin("profil"), "report", "--format", "tree", file.string()}, dir.path());
  ASSERT_EQ(tree.status, 0) << tree.err;
  EXPECT_EQ(tree.out.find("libprofil"), std::string::npos);
  EXPECT_NE(tree.out.find(own + " samples ("), std::string::npos) << tree.out.substr(0, 400);
}

}  // namespace
