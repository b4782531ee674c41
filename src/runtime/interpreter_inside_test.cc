// The dump's merge of a stored stack (interpreter_inside.h) forwards the
// GIL's state its marker holds (issue 31, sampler/python_sampling.h), and
// the marker keeps the walk's status and the state apart.
#include "runtime/interpreter_inside.h"

#include <gtest/gtest.h>

#include <vector>

#include "format/profile.h"
#include "sampler/python_sampling.h"

namespace profiling::runtime {
namespace {

struct Visit {
  std::vector<uint64_t> pcs;
  bool truncated;
  uint64_t weight;
  int32_t tid;
  uint32_t observations;
  uint8_t gil;
};

class Recorder final : public StackVisitor {
 public:
  void visit(const uint64_t* pcs, uint32_t depth, bool truncated, uint64_t weight, int32_t tid,
             uint32_t observations, uint8_t gil) override {
    visits.push_back({{pcs, pcs + depth}, truncated, weight, tid, observations, gil});
  }
  std::vector<Visit> visits;
};

constexpr uint64_t kBase = format::kInterpreterFrameBase;
uint64_t name_frame(uint64_t code, uint64_t /*instruction*/) { return kBase + 10 + code; }

TEST(InterpreterInside, TheMarkerKeepsTheWalksStatusAndTheGil) {
  for (auto status : {interp::WalkStatus::kComplete, interp::WalkStatus::kTruncated, interp::WalkStatus::kReadError,
                      interp::WalkStatus::kLoop})
    for (uint8_t gil : {format::kGilUnknown, format::kGilHeld, format::kGilReleased}) {
      const uint64_t marker = sampler::python_marker(status, gil);
      EXPECT_TRUE(sampler::is_python_marker(marker));
      EXPECT_EQ(sampler::marker_status(marker), status);
      EXPECT_EQ(sampler::marker_gil(marker), gil);
    }
}

TEST(InterpreterInside, TheMergedStackCarriesTheMarkersGil) {
  const interp::EvalLoop loop{0x1000, 0x2000};
  const uint64_t leaf = 0x7000, in_loop = 0x1010, root = 0x5000;
  const interp::RawFrame frame{3, 40, interp::kEntryFrame};
  for (uint8_t gil : {format::kGilHeld, format::kGilReleased, format::kGilUnknown}) {
    const std::vector<uint64_t> stored{leaf, in_loop, root,
                                       sampler::python_marker(interp::WalkStatus::kComplete, gil), frame.code,
                                       sampler::encode_instruction(frame)};
    Recorder recorder;
    merge_stored_frames(recorder, stored.data(), static_cast<uint32_t>(stored.size()), false, 4, 77, 2, name_frame,
                        loop, kBase, kBase + 1, false);
    ASSERT_EQ(recorder.visits.size(), 1u);
    const Visit& v = recorder.visits[0];
    EXPECT_EQ(v.gil, gil);
    // The Python frame inside its loop frame, the rest as they were.
    EXPECT_EQ(v.pcs, (std::vector<uint64_t>{leaf, kBase + 13, in_loop, root}));
    EXPECT_EQ(v.weight, 4u);
    EXPECT_EQ(v.tid, 77);
    EXPECT_EQ(v.observations, 2u);
  }
  // A stack without Python frames: as it is, the GIL unknown.
  const std::vector<uint64_t> native{leaf, root};
  Recorder recorder;
  merge_stored_frames(recorder, native.data(), 2, true, 1, 77, 1, name_frame, loop, kBase, kBase + 1, false);
  ASSERT_EQ(recorder.visits.size(), 1u);
  EXPECT_EQ(recorder.visits[0].pcs, native);
  EXPECT_EQ(recorder.visits[0].gil, format::kGilUnknown);
  EXPECT_TRUE(recorder.visits[0].truncated);
}

}  // namespace
}  // namespace profiling::runtime
