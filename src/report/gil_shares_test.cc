// A thread's share of samples holding CPython's GIL (issue 31): counted by
// samples' counts per (pid, tid), "" where none says, never 0 % or 100 %
// unless all agree; and what --by thread and --threads show of it.
#include "report/gil_shares.h"

#include <gtest/gtest.h>

namespace profiling::report {
namespace {

format::Sample sample(uint64_t count, int32_t pid, int32_t tid, uint8_t gil) {
  format::Sample s{0x1000, count, pid, format::StackTable::kNoCallers, tid};
  s.gil = gil;
  return s;
}

TEST(GilShares, ShareOfEachThreadsSamplesByCount) {
  format::Profile profile;
  profile.pid = 40;
  profile.samples = {sample(97, 0, 41, format::kGilHeld), sample(3, 0, 41, format::kGilReleased),
                     sample(5, 0, 42, format::kGilReleased), sample(7, 0, 43, format::kGilUnknown),
                     sample(1, 50, 41, format::kGilHeld)};
  const GilShares shares(profile);
  EXPECT_EQ(shares.label(0, 41), " [GIL 97 %]");
  EXPECT_EQ(shares.label(40, 41), " [GIL 97 %]");  // the profile's own pid
  EXPECT_EQ(shares.label(0, 42), " [GIL 0 %]");
  EXPECT_EQ(shares.label(0, 43), "");  // no sample says
  EXPECT_EQ(shares.label(50, 41), " [GIL 100 %]");  // another process's thread 41
  EXPECT_EQ(shares.label(0, 44), "");
}

TEST(GilShares, NeverRoundsToAllOrNone) {
  format::Profile profile;
  profile.pid = 1;
  profile.samples = {sample(999, 0, 2, format::kGilHeld), sample(1, 0, 2, format::kGilReleased),
                     sample(1, 0, 3, format::kGilHeld), sample(999, 0, 3, format::kGilReleased)};
  const GilShares shares(profile);
  EXPECT_EQ(shares.label(0, 2), " [GIL 99 %]");
  EXPECT_EQ(shares.label(0, 3), " [GIL 1 %]");
}

}  // namespace
}  // namespace profiling::report
