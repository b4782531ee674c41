// The BPF program's walk (python_bpf.h), on frame chains this test lays
// out in its own memory with a layout of its own: the program runs at each
// sample of a task-clock event on this thread and must give the chain's
// frames, innermost first, with the entry marks of the frame model. Needs
// root (or CAP_BPF and CAP_PERFMON): skipped, saying why, elsewhere.
#include "outside/python_bpf.h"

#include "outside/bpf_test_event.h"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>

namespace profiling::outside {
namespace {

// A frame as the test lays it out: the fields a layout points at.
struct FakeFrame {
  uint64_t back = 0;
  uint64_t code = 0;
  uint64_t instruction = 0;
  int8_t owner = 0;
  uint8_t is_entry = 0;
  uint8_t pad[6] = {};
};

struct FakeThreadState {
  uint64_t unused = 0;
  uint64_t frame = 0;  // the innermost frame
};

interp::PythonLayout fake_layout(interp::PythonFrameModel model) {
  interp::PythonLayout l;
  l.model = model;
  l.tstate_frame = offsetof(FakeThreadState, frame);
  l.frame_back = offsetof(FakeFrame, back);
  l.frame_code = offsetof(FakeFrame, code);
  l.frame_instruction = offsetof(FakeFrame, instruction);
  l.frame_size = sizeof(FakeFrame);
  if (model == interp::PythonFrameModel::kInterpFrame312) {
    l.frame_owner = offsetof(FakeFrame, owner);
    l.owner_cstack = 3;
  }
  if (model == interp::PythonFrameModel::kInterpFrame311) l.frame_is_entry = offsetof(FakeFrame, is_entry);
  return l;
}

class PythonBpf : public BpfOnThisThread {
 protected:
  // The walk of this thread's chain from state, as the program read it.
  // gil: where the GIL's holder is (none by default); *gil_state: what the
  // program read of it.
  std::vector<interp::RawFrame> walk(const interp::PythonLayout& layout, const FakeThreadState& state,
                                     interp::WalkResult* result, const interp::PythonGil& gil = {},
                                     uint8_t* gil_state = nullptr) {
    const pid_t tid = static_cast<pid_t>(::syscall(SYS_gettid));
    EXPECT_TRUE(reads_->add_process(::getpid(), layout));
    reads_->set_gil(::getpid(), gil);
    reads_->add_thread(tid, reinterpret_cast<uint64_t>(&state));
    burn_until_records(reads_->counters().records + 5);  // beyond those of an earlier walk
    reads_->drain();
    std::vector<interp::RawFrame> frames;
    EXPECT_TRUE(reads_->take_oldest(tid, &frames, result, gil_state)) << "no record in 5 s of CPU";
    reads_->forget_process(::getpid());
    reads_->forget_thread(tid);
    return frames;
  }

};

TEST_F(PythonBpf, ShimFramesOwnedByTheCStackMarkTheFrameInsideThemAsAnEntry) {
  // 3.12+: inner(A) -> B -> shim -> C -> shim: A, B ran in one loop call
  // (B its entry), C in another.
  FakeFrame outer_shim{.owner = 3}, c{}, inner_shim{.owner = 3}, b{}, a{};
  c = {.back = reinterpret_cast<uint64_t>(&outer_shim), .code = 0xC0DE0C, .instruction = 0x1C};
  inner_shim.back = reinterpret_cast<uint64_t>(&c);
  b = {.back = reinterpret_cast<uint64_t>(&inner_shim), .code = 0xC0DE0B, .instruction = 0x1B};
  a = {.back = reinterpret_cast<uint64_t>(&b), .code = 0xC0DE0A, .instruction = 0x1A};
  FakeThreadState state{.frame = reinterpret_cast<uint64_t>(&a)};
  interp::WalkResult result;
  const auto frames = walk(fake_layout(interp::PythonFrameModel::kInterpFrame312), state, &result);
  ASSERT_EQ(result.status, interp::WalkStatus::kComplete);
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[0].code, 0xC0DE0Au);
  EXPECT_EQ(frames[0].instruction, 0x1Au);
  EXPECT_EQ(frames[0].flags, 0u);
  EXPECT_EQ(frames[1].code, 0xC0DE0Bu);
  EXPECT_EQ(frames[1].flags, interp::kEntryFrame);
  EXPECT_EQ(frames[2].code, 0xC0DE0Cu);
  EXPECT_EQ(frames[2].flags, interp::kEntryFrame);
}

TEST_F(PythonBpf, FrameObjectsAreEachAnEntryWithASignedIntInstruction) {
  // ≤3.10: f_lasti is an int (-1 before the first instruction).
  FakeFrame outer{}, inner{};
  outer = {.code = 0x0A7E4, .instruction = 0xFFFFFFFFu};
  inner = {.back = reinterpret_cast<uint64_t>(&outer), .code = 0x1A7E4, .instruction = 42};
  FakeThreadState state{.frame = reinterpret_cast<uint64_t>(&inner)};
  interp::WalkResult result;
  const auto frames = walk(fake_layout(interp::PythonFrameModel::kFrameObject), state, &result);
  ASSERT_EQ(result.status, interp::WalkStatus::kComplete);
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].code, 0x1A7E4u);
  EXPECT_EQ(frames[0].instruction, 42u);
  EXPECT_EQ(frames[1].instruction, static_cast<uint64_t>(-1));
  EXPECT_EQ(frames[0].flags & frames[1].flags, interp::kEntryFrame);
}

// Issue 31: the GIL's holder read beside the frames. ≤3.11: a pointer to
// the holder's thread state, NULL while released; 3.12+: last_holder then
// `locked` 8 bytes after it.
TEST_F(PythonBpf, TheGilIsHeldWhereItsHolderIsTheThreadAndItIsLocked) {
  FakeFrame frame{.code = 0xC0DE};
  FakeThreadState state{.frame = reinterpret_cast<uint64_t>(&frame)};
  struct {
    uint64_t holder;
    int32_t locked;
    int32_t pad;
  } gil{};
  const auto layout = fake_layout(interp::PythonFrameModel::kInterpFrame312);
  const interp::PythonGil pointer{reinterpret_cast<uint64_t>(&gil.holder), -1};
  const interp::PythonGil with_locked{reinterpret_cast<uint64_t>(&gil.holder), 8};
  struct Case {
    const char* what;
    interp::PythonGil where;
    uint64_t holder;
    int32_t locked;
    uint8_t expected;
  } cases[] = {
      {"no holder known", {}, reinterpret_cast<uint64_t>(&state), 1, format::kGilUnknown},
      {"the thread holds it", pointer, reinterpret_cast<uint64_t>(&state), 0, format::kGilHeld},
      {"no thread holds it", pointer, 0, 0, format::kGilReleased},
      {"another thread holds it", pointer, 0x1234560, 0, format::kGilReleased},
      {"last held by the thread, locked", with_locked, reinterpret_cast<uint64_t>(&state), 1, format::kGilHeld},
      {"last held by the thread, unlocked", with_locked, reinterpret_cast<uint64_t>(&state), 0, format::kGilReleased},
      {"last held by another, locked", with_locked, 0x1234560, 1, format::kGilReleased},
  };
  for (const Case& c : cases) {
    // Records of the last case still in the ring go before this one.
    reads_->drain();
    reads_->forget_thread(static_cast<pid_t>(::syscall(SYS_gettid)));
    gil.holder = c.holder;
    gil.locked = c.locked;
    interp::WalkResult result;
    uint8_t state_read = 0xff;
    walk(layout, state, &result, c.where, &state_read);
    EXPECT_EQ(state_read, c.expected) << c.what;
  }
}

TEST_F(PythonBpf, ALoopedChainEndsAtTheStepBound) {
  // A chain read mid-change may loop: the walk stops, says so, keeps what
  // it read (the record's frames, up to the bound).
  FakeFrame a{}, b{};
  a = {.back = reinterpret_cast<uint64_t>(&b), .code = 0xA};
  b = {.back = reinterpret_cast<uint64_t>(&a), .code = 0xB};
  FakeThreadState state{.frame = reinterpret_cast<uint64_t>(&a)};
  interp::WalkResult result;
  const auto frames = walk(fake_layout(interp::PythonFrameModel::kInterpFrame311), state, &result);
  EXPECT_NE(result.status, interp::WalkStatus::kComplete);
  ASSERT_FALSE(frames.empty());
  EXPECT_EQ(frames[0].code, 0xAu);
  EXPECT_EQ(frames[1].code, 0xBu);
}

TEST_F(PythonBpf, AnUnreadableFrameIsAReadError) {
  FakeThreadState state{.frame = 0x10};  // the first page: never mapped
  interp::WalkResult result;
  const auto frames = walk(fake_layout(interp::PythonFrameModel::kInterpFrame311), state, &result);
  EXPECT_EQ(result.status, interp::WalkStatus::kReadError);
  EXPECT_TRUE(frames.empty());
}

}  // namespace
}  // namespace profiling::outside
