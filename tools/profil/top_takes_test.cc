#include "top_takes.h"

#include <gtest/gtest.h>

namespace profiling::cli {
namespace {

outside::ImageProfile take(int pid, int generation, std::vector<uint64_t> callers, uint64_t count) {
  outside::ImageProfile p;
  p.name = "prog";
  p.generation = generation;
  format::Profile& profile = p.data.profile;
  profile.pid = pid;
  profile.program = "/bin/prog";
  profile.has_observations = true;
  profile.duration_ns = 1'000'000'000;
  profile.mappings.push_back({.start = 0x1000, .limit = 0x2000, .file_offset = 0, .path = "/bin/prog", .build_id = ""});
  // An unrelated chain first, so that the ids of the takes differ.
  profile.stacks.intern(std::vector<uint64_t>{0x1999, static_cast<uint64_t>(count)}, false);
  const uint32_t stack = profile.stacks.intern(callers, false);
  format::Sample s{0x1010, count, 0, stack, pid};
  s.observations = count;
  profile.samples.push_back(s);
  p.data.cpu_ns = count * 2'000'000;
  format::profraw::Unsampled u{};
  u.cause = static_cast<uint32_t>(format::profraw::UnsampledCause::ring_full);
  u.cpu_ns = 10;
  u.threads = 1;
  u.tids[0] = pid;
  p.data.unsampled.push_back(u);
  return p;
}

TEST(TopTakes, TheTakesOfOneImageAreOneProfile) {
  std::vector<outside::ImageProfile> kept;
  sum_takes(&kept, {take(10, 0, {0x1100, 0x1200}, 3)});
  outside::ImageProfile later = take(10, 0, {0x1100, 0x1200}, 2);
  later.data.profile.mappings.push_back({.start = 0x3000, .limit = 0x4000, .file_offset = 0, .path = "/lib/x.so", .build_id = ""});
  later.data.profile.thread_names[10] = "main";
  later.ended = true;
  later.data.end_reason = format::profraw::EndReason::exit;
  sum_takes(&kept, {std::move(later), take(10, 1, {0x1300}, 4), take(11, 0, {0x1100, 0x1200}, 1)});
  ASSERT_EQ(kept.size(), 3u);
  const format::ProfrawData& d = kept[0].data;
  ASSERT_EQ(d.profile.samples.size(), 1u);
  EXPECT_EQ(d.profile.samples[0].count, 5u);
  EXPECT_EQ(d.profile.samples[0].observations, 5u);
  const auto callers = d.profile.stacks.callers(d.profile.samples[0].stack);
  EXPECT_EQ(std::vector<uint64_t>(callers.begin(), callers.end()), (std::vector<uint64_t>{0x1100, 0x1200}));
  EXPECT_EQ(d.profile.mappings.size(), 2u);
  EXPECT_EQ(d.profile.thread_names.at(10), "main");
  EXPECT_EQ(d.profile.duration_ns, 2'000'000'000u);
  EXPECT_TRUE(d.profile.has_observations);
  EXPECT_EQ(d.cpu_ns, 10'000'000u);
  ASSERT_EQ(d.unsampled.size(), 1u);
  EXPECT_EQ(d.unsampled[0].cpu_ns, 20u);
  EXPECT_EQ(d.unsampled[0].tids[1], 0);  // the same thread once
  EXPECT_EQ(d.end_reason, format::profraw::EndReason::exit);
  EXPECT_TRUE(kept[0].ended);
  // Another image of the pid (after an exec), another process: apart.
  EXPECT_EQ(kept[1].generation, 1);
  EXPECT_EQ(kept[1].data.profile.samples[0].count, 4u);
  EXPECT_EQ(kept[2].data.profile.pid, 11);
}

}  // namespace
}  // namespace profiling::cli
