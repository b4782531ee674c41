// The dump's merge of a stored stack (interpreter_inside.h) forwards the
// GIL's state its marker holds (issue 31, sampler/python_sampling.h), and
// the marker keeps the walk's status and the state apart.
#include "runtime/interpreter_inside.h"

#include <gtest/gtest.h>

#include <algorithm>
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

// A code object's tag (sampler::code_tag) sits above its address and tells
// two code objects of one address apart: a module's top-level code (name
// "<module>", line 1) and the function made at its address after it was
// freed (a loaded suite run named three() "<module>"). Never 0, which
// stands for "not read".
TEST(InterpreterInside, ACodeObjectsTagTellsAReusedAddressApart) {
  const uint64_t module_name = 0x7f12'3456'7890, three_name = 0x7f12'3456'9a30;
  const uint64_t module = sampler::code_tag(module_name, 1), three = sampler::code_tag(three_name, 22);
  EXPECT_NE(module, three);
  EXPECT_NE(sampler::code_tag(three_name, 22), sampler::code_tag(three_name, 27));  // same name, other line
  EXPECT_EQ(sampler::code_tag(three_name, 22), three);
  // Of 4,096 names at 16-byte steps, on 3 lines each, the tags spread:
  // no value has many more than its share (12,288 / 32,768 < 1).
  std::vector<int> seen(1u << 16);
  int most = 0;
  for (uint64_t k = 0; k < 4096; ++k)
    for (int32_t line : {1, 7, 300}) {
      const uint64_t tag = sampler::code_tag(0x7f00'0000'0000 + 16 * k, line);
      ASSERT_NE(tag, 0u);
      ASSERT_LT(tag, 1u << 16);
      most = std::max(most, ++seen[tag]);
    }
  EXPECT_LE(most, 4);
  const uint64_t word = 0x7f12'0000'1230 | (three << 48);
  EXPECT_EQ(word & sampler::kCodeAddressMask, 0x7f12'0000'1230u);
  EXPECT_EQ(word >> 48, three);
}

}  // namespace
}  // namespace profiling::runtime
