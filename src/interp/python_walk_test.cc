// The walker on frames built in this process's memory (LocalMemory): the
// three ways entry frames are told (every PyFrameObject, 3.11's is_entry,
// 3.12+'s shims), the depth cut, a chain that loops, a failed read.
#include "interp/python_walk.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "interp/readers.h"

namespace profiling::interp {
namespace {

// Frames as the layout places their fields, in buffers of this process.
class Frames {
 public:
  explicit Frames(const PythonLayout& layout) : layout_(layout) {}
  // A frame of code `code` calling into `inner` (0: the innermost); returns
  // its address. owner: 3.11+ owner byte; entry: 3.11's is_entry.
  uint64_t add(uint64_t code, uint64_t instruction, int owner = 0, bool entry = false) {
    buffers_.emplace_back(kMaxPythonFrameRead, 0);
    uint8_t* bytes = buffers_.back().data();
    std::memcpy(bytes + layout_.frame_code, &code, 8);
    if (layout_.model == PythonFrameModel::kFrameObject) {
      const int32_t lasti = static_cast<int32_t>(instruction);
      std::memcpy(bytes + layout_.frame_instruction, &lasti, 4);
    } else {
      std::memcpy(bytes + layout_.frame_instruction, &instruction, 8);
    }
    if (layout_.frame_owner >= 0) bytes[layout_.frame_owner] = static_cast<uint8_t>(owner);
    if (layout_.frame_is_entry >= 0) bytes[layout_.frame_is_entry] = entry;
    return reinterpret_cast<uint64_t>(bytes);
  }
  // Makes frame its own caller: a chain read mid-change.
  void loop(uint64_t frame) { std::memcpy(reinterpret_cast<uint8_t*>(frame) + layout_.frame_back, &frame, 8); }
  // Links frames innermost first and makes a thread state pointing at the
  // first (through a _PyCFrame where the version has one).
  uint64_t chain(const std::vector<uint64_t>& frames) {
    for (size_t i = 0; i < frames.size(); ++i) {
      const uint64_t back = i + 1 < frames.size() ? frames[i + 1] : 0;
      std::memcpy(reinterpret_cast<uint8_t*>(frames[i]) + layout_.frame_back, &back, 8);
    }
    uint64_t first = frames.empty() ? 0 : frames[0];
    if (layout_.cframe_current_frame >= 0) {
      std::memcpy(cframe_ + layout_.cframe_current_frame, &first, 8);
      first = reinterpret_cast<uint64_t>(cframe_);
    }
    std::memcpy(tstate_ + layout_.tstate_frame, &first, 8);
    return reinterpret_cast<uint64_t>(tstate_);
  }

 private:
  PythonLayout layout_;
  std::vector<std::vector<uint8_t>> buffers_;
  alignas(8) uint8_t tstate_[512] = {};
  alignas(8) uint8_t cframe_[64] = {};
};

PythonLayout layout_of(int major, int minor) {
  PythonLayout layout;
  EXPECT_TRUE(python_layout_for(major, minor, &layout));
  return layout;
}

TEST(PythonWalk, EveryFrameObjectIsAnEntry) {
  const PythonLayout layout = layout_of(3, 9);
  Frames frames(layout);
  const uint64_t tstate = frames.chain({frames.add(0x100, 24), frames.add(0x200, -1)});
  LocalMemory memory;
  RawFrame out[4];
  const WalkResult result = walk_python_frames(layout, memory, tstate, out, 4);
  EXPECT_EQ(result.status, WalkStatus::kComplete);
  ASSERT_EQ(result.count, 2u);
  EXPECT_EQ(out[0].code, 0x100u);
  EXPECT_EQ(out[0].instruction, 24u);
  EXPECT_EQ(static_cast<int64_t>(out[1].instruction), -1);  // a frame not started
  EXPECT_EQ(out[0].flags & kEntryFrame, kEntryFrame);
  EXPECT_EQ(out[1].flags & kEntryFrame, kEntryFrame);
}

TEST(PythonWalk, IsEntryOn311) {
  const PythonLayout layout = layout_of(3, 11);
  Frames frames(layout);
  const uint64_t tstate =
      frames.chain({frames.add(0x100, 0x1000), frames.add(0x200, 0x2000, 0, true), frames.add(0x300, 0x3000, 0, true)});
  LocalMemory memory;
  RawFrame out[4];
  const WalkResult result = walk_python_frames(layout, memory, tstate, out, 4);
  ASSERT_EQ(result.count, 3u);
  EXPECT_EQ(out[0].flags, 0u);
  EXPECT_EQ(out[1].flags, kEntryFrame);
  EXPECT_EQ(out[2].flags, kEntryFrame);
  EXPECT_EQ(out[1].instruction, 0x2000u);
}

TEST(PythonWalk, ShimsMarkEntriesAndAreSkipped) {
  for (int minor : {12, 13}) {
    PythonLayout layout;
    if (minor == 12) {
      layout = layout_of(3, 12);
    } else {
      // 3.13's layout comes from the process; its table-less fields are
      // the same places as 3.12's for this test's purpose.
      layout = layout_of(3, 12);
      layout.model = PythonFrameModel::kInterpFrame313;
      layout.cframe_current_frame = -1;
      layout.tstate_frame = 72;
    }
    Frames frames(layout);
    const int shim = layout.owner_cstack;
    const uint64_t tstate = frames.chain({frames.add(0x100, 1), frames.add(0x200, 2), frames.add(0x999, 0, shim),
                                          frames.add(0x300, 3), frames.add(0x999, 0, shim)});
    LocalMemory memory;
    RawFrame out[8];
    const WalkResult result = walk_python_frames(layout, memory, tstate, out, 8);
    EXPECT_EQ(result.status, WalkStatus::kComplete);
    ASSERT_EQ(result.count, 3u) << minor;
    EXPECT_EQ(out[0].flags, 0u);
    EXPECT_EQ(out[1].code, 0x200u);
    EXPECT_EQ(out[1].flags, kEntryFrame);
    EXPECT_EQ(out[2].code, 0x300u);
    EXPECT_EQ(out[2].flags, kEntryFrame);
  }
}

TEST(PythonWalk, DepthCutIsSaid) {
  const PythonLayout layout = layout_of(3, 12);
  Frames frames(layout);
  const int shim = layout.owner_cstack;
  const uint64_t tstate =
      frames.chain({frames.add(0x100, 1), frames.add(0x200, 2), frames.add(0x300, 3), frames.add(0x999, 0, shim)});
  LocalMemory memory;
  RawFrame out[3];
  WalkResult result = walk_python_frames(layout, memory, tstate, out, 2);
  EXPECT_EQ(result.status, WalkStatus::kTruncated);
  EXPECT_EQ(result.count, 2u);
  // Exactly full: the shim after the last frame is no cut.
  result = walk_python_frames(layout, memory, tstate, out, 3);
  EXPECT_EQ(result.status, WalkStatus::kComplete);
  EXPECT_EQ(result.count, 3u);
  EXPECT_EQ(out[2].flags, kEntryFrame);
}

TEST(PythonWalk, LoopAndNoFrames) {
  const PythonLayout layout = layout_of(3, 10);
  Frames frames(layout);
  const uint64_t a = frames.add(0x100, 1);
  const uint64_t tstate = frames.chain({a});
  frames.loop(a);
  LocalMemory memory;
  RawFrame out[64];
  WalkResult result = walk_python_frames(layout, memory, tstate, out, 64);
  EXPECT_EQ(result.status, WalkStatus::kTruncated);  // the array fills first
  const PythonLayout shims = layout_of(3, 12);
  Frames shim_frames(shims);
  const uint64_t s = shim_frames.add(0x999, 0, shims.owner_cstack);
  const uint64_t shim_tstate = shim_frames.chain({s});
  shim_frames.loop(s);
  result = walk_python_frames(shims, memory, shim_tstate, out, 64);
  EXPECT_EQ(result.status, WalkStatus::kLoop);  // shims alone never fill it
  result = walk_python_frames(layout, memory, Frames(layout).chain({}), out, 64);
  EXPECT_EQ(result.status, WalkStatus::kComplete);
  EXPECT_EQ(result.count, 0u);
}

TEST(PythonWalk, UnreadableThreadState) {
  const PythonLayout layout = layout_of(2, 7);
  ProcessMemory memory(::getpid());
  RawFrame out[4];
  const WalkResult result = walk_python_frames(layout, memory, 8, out, 4);
  EXPECT_EQ(result.status, WalkStatus::kReadError);
  EXPECT_EQ(memory.calls(), 1u);
}

TEST(PythonLayouts, KnownVersionsOnly) {
  PythonLayout layout;
  for (int minor : {6, 7, 8, 9, 10, 11, 12}) EXPECT_TRUE(python_layout_for(3, minor, &layout)) << minor;
  EXPECT_TRUE(python_layout_for(2, 7, &layout));
  EXPECT_FALSE(python_layout_for(3, 5, &layout));
  EXPECT_FALSE(python_layout_for(3, 13, &layout));  // from _Py_DebugOffsets
  EXPECT_FALSE(python_layout_for(2, 6, &layout));
  uint8_t offsets[kDebugOffsetsSize] = {};
  const char* why = nullptr;
  std::memcpy(offsets, "xdebugpy", 8);
  const uint64_t v314 = 0x030e00f0;
  std::memcpy(offsets + 8, &v314, 8);
  EXPECT_FALSE(python_layout_from_debug_offsets(offsets, sizeof offsets, &layout, &why));
  EXPECT_NE(std::string(why).find("other than 3.13"), std::string::npos);
}

}  // namespace
}  // namespace profiling::interp
