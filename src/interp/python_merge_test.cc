// The merge rule (frames.h) on hand-made stacks: each eval-loop frame takes
// the frames up to its entry frame, native frames between them stay, and a
// stack that does not fit keeps its native frames with the misfit mark.
#include "interp/python_merge.h"

#include <gtest/gtest.h>

#include <vector>

namespace profiling::interp {
namespace {

constexpr EvalLoop kLoop{0x1000, 0x2000};
constexpr uint64_t kMisfit = 0xA000'0000'0000'0000;

std::vector<uint64_t> merge(const std::vector<uint64_t>& native, const std::vector<RawFrame>& raw,
                            WalkStatus status = WalkStatus::kComplete, bool* fits = nullptr, bool at_sample = false,
                            uint64_t between = 0) {
  std::vector<uint64_t> python;
  for (const RawFrame& frame : raw) python.push_back(frame.code + 0x100);  // shown at code + 0x100
  std::vector<uint64_t> out(native.size() + raw.size() + 1);
  const MergeResult result =
      merge_python_frames(native.data(), static_cast<uint32_t>(native.size()), raw.data(), python.data(),
                          WalkResult{static_cast<uint32_t>(raw.size()), status}, kLoop, kMisfit, out.data(),
                          static_cast<uint32_t>(out.size()), at_sample, between);
  if (fits) *fits = result.fits;
  out.resize(result.count);
  return out;
}

TEST(PythonMerge, EachLoopCallTakesItsFramesUpToTheEntry) {
  // leaf 0x5000 (C) <- loop <- C 0x6000 <- loop <- main 0x7000; Python:
  // keyed (entry) inside the inner loop, c_path, main (entry) in the outer.
  bool fits = false;
  const auto merged = merge({0x5000, 0x1100, 0x6000, 0x1200, 0x7000},
                            {{0x10, 0, kEntryFrame}, {0x20, 0, 0}, {0x30, 0, kEntryFrame}},
                            WalkStatus::kComplete, &fits);
  EXPECT_TRUE(fits);
  EXPECT_EQ(merged, (std::vector<uint64_t>{0x5000, 0x110, 0x1100, 0x6000, 0x120, 0x130, 0x1200, 0x7000}));
}

TEST(PythonMerge, ALoopWithoutFramesIsAMisfit) {
  bool fits = true;
  const auto merged = merge({0x5000, 0x1100, 0x6000, 0x1200}, {{0x10, 0, kEntryFrame}}, WalkStatus::kComplete, &fits);
  EXPECT_FALSE(fits);
  EXPECT_EQ(merged, (std::vector<uint64_t>{0x5000, kMisfit, 0x1100, 0x6000, 0x1200}));
}

TEST(PythonMerge, AnEmptyWalkUnderTheLoopIsAMisfit) {
  // Read after the fact, the thread had no Python frames left (issue 31:
  // the interpreter compiling the script after init_import_site): the
  // sample had some, so its stack moved; marked, never bare. A chain that
  // could not be read at all is marked the same way (no arrays needed).
  bool fits = true;
  EXPECT_EQ(merge({0x5000, 0x1100, 0x6000}, {}, WalkStatus::kComplete, &fits),
            (std::vector<uint64_t>{0x5000, kMisfit, 0x1100, 0x6000}));
  EXPECT_FALSE(fits);
  const uint64_t native[] = {0x5000, 0x1100, 0x6000, 0x1200};
  uint64_t out[5];
  const MergeResult unread = merge_python_frames(native, 4, nullptr, nullptr, WalkResult{0, WalkStatus::kReadError},
                                                 kLoop, kMisfit + 3, out, 5);
  EXPECT_FALSE(unread.fits);
  EXPECT_EQ(std::vector<uint64_t>(out, out + unread.count),
            (std::vector<uint64_t>{0x5000, kMisfit + 3, 0x1100, 0x6000, 0x1200}));
  // Read at the sample, an empty walk under one loop call is that call
  // entering its first frame.
  EXPECT_EQ(merge({0x5000, 0x1100, 0x6000}, {}, WalkStatus::kComplete, &fits, true, kMisfit + 2),
            (std::vector<uint64_t>{0x5000, kMisfit + 2, 0x1100, 0x6000}));
  EXPECT_TRUE(fits);
}

TEST(PythonMerge, AtTheSampleALoopEnteringACallHasNoFrameYet) {
  // The sampled pc in the innermost loop call, whose frame is not linked
  // yet: read at the sample it fits, the loop frame bare.
  bool fits = false;
  const auto merged =
      merge({0x1100, 0x6000, 0x1200}, {{0x30, 0, kEntryFrame}}, WalkStatus::kComplete, &fits, /*at_sample=*/true);
  EXPECT_TRUE(fits);
  EXPECT_EQ(merged, (std::vector<uint64_t>{0x1100, 0x6000, 0x130, 0x1200}));
  // Marked, where the caller names such frames.
  EXPECT_EQ(merge({0x1100, 0x6000, 0x1200}, {{0x30, 0, kEntryFrame}}, WalkStatus::kComplete, &fits, true, kMisfit + 1),
            (std::vector<uint64_t>{kMisfit + 1, 0x1100, 0x6000, 0x130, 0x1200}));
  // The loop call's own callee (3.10's _Py_CheckFunctionResult at its exit) too.
  EXPECT_EQ(merge({0x5000, 0x1100, 0x6000, 0x1200}, {{0x30, 0, kEntryFrame}}, WalkStatus::kComplete, &fits, true),
            (std::vector<uint64_t>{0x5000, 0x1100, 0x6000, 0x130, 0x1200}));
  EXPECT_TRUE(fits);
  // Not after the fact, nor with two loop calls more than entry frames.
  merge({0x1100, 0x6000, 0x1200}, {{0x30, 0, kEntryFrame}}, WalkStatus::kComplete, &fits, false);
  EXPECT_FALSE(fits);
  merge({0x1100, 0x1150, 0x1200}, {{0x30, 0, kEntryFrame}}, WalkStatus::kComplete, &fits, true);
  EXPECT_FALSE(fits);
}

TEST(PythonMerge, FramesNoLoopTookAndCutWalksAreMisfits) {
  bool fits = true;
  merge({0x1100}, {{0x10, 0, kEntryFrame}, {0x20, 0, kEntryFrame}}, WalkStatus::kComplete, &fits);
  EXPECT_FALSE(fits);
  merge({0x1100}, {{0x10, 0, kEntryFrame}}, WalkStatus::kReadError, &fits);
  EXPECT_FALSE(fits);
}

TEST(PythonMerge, ANativeStackWithoutTheLoopStaysAsItIs) {
  bool fits = false;
  EXPECT_EQ(merge({0x5000, 0x6000}, {}, WalkStatus::kComplete, &fits), (std::vector<uint64_t>{0x5000, 0x6000}));
  EXPECT_TRUE(fits);
}

}  // namespace
}  // namespace profiling::interp
