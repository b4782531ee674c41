// The BPF program's Ruby walk (ruby_bpf.h, bpf/ruby_stacks.bpf.h), on
// control frames this test lays out in its own memory as Ruby 3.1 lays
// them out (interp::ruby_layout_for(3, 1)): the program runs at each
// sample of a task-clock event on this thread and must give the frames
// innermost first, C and dummy frames left out, finish frames as entries,
// as interp/ruby_walk.cc does after the fact. Needs root (or CAP_BPF and
// CAP_PERFMON): skipped, saying why, elsewhere.
#include "outside/ruby_bpf.h"

#include "outside/bpf_test_event.h"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>


namespace profiling::outside {
namespace {

const interp::RubyLayout& layout() { return *interp::ruby_layout_for(3, 1); }

// A thread's VM stack as Ruby 3.1 has it: VALUEs from the bottom, control
// frames (8 words each) down from the top, the outermost at the end; each
// frame's ep points at a flags word of its own.
struct FakeThread {
  static constexpr int kValues = 64;
  uint64_t stack[kValues] = {};
  uint64_t flags[8] = {};   // the frames' ep[0]
  uint64_t ec[3] = {};      // rb_execution_context_t: vm_stack, vm_stack_size, cfp
  uint64_t thread[16] = {}; // rb_thread_t: its ec at layout().thread_ec

  // Frame i from the outermost (0) inward: words at the stack's end.
  uint64_t* frame(int i) { return &stack[kValues - 8 * (i + 1)]; }
  void set(int i, uint64_t pc, uint64_t iseq, uint64_t frame_flags) {
    uint64_t* f = frame(i);
    f[layout().cfp_pc / 8] = pc;
    f[layout().cfp_iseq / 8] = iseq;
    f[layout().cfp_ep / 8] = reinterpret_cast<uint64_t>(&flags[i]);
    flags[i] = frame_flags;
  }
  // innermost: the index of the innermost frame.
  void point(int innermost) {
    ec[layout().ec_vm_stack / 8] = reinterpret_cast<uint64_t>(stack);
    ec[layout().ec_vm_stack_size / 8] = kValues;
    ec[layout().ec_cfp / 8] = reinterpret_cast<uint64_t>(frame(innermost));
    thread[layout().thread_ec / 8] = reinterpret_cast<uint64_t>(ec);
  }
};

// VM_FRAME_MAGIC_METHOD 0x11110001, _BLOCK 0x22220001, _CFUNC 0x55550001
// (vm_core.h), with the dummy's magic and the flags of ruby_layout.cc.
constexpr uint64_t kMethod = 0x11110001, kBlock = 0x22220001, kCFunc = 0x55550001;

class RubyBpf : public BpfOnThisThread {
 protected:
  // The walk of this thread's frames, as the program read it at a sample.
  std::vector<interp::RawFrame> walk(const FakeThread& thread, interp::WalkResult* result) {
    const pid_t tid = static_cast<pid_t>(::syscall(SYS_gettid));
    // Records of an earlier walk, drained and dropped.
    reads_->drain();
    reads_->forget_thread(tid);
    const uint64_t before = reads_->counters().records;
    EXPECT_TRUE(add_ruby_process(*reads_, ::getpid(), layout()));
    reads_->add_thread(tid, reinterpret_cast<uint64_t>(thread.thread));
    burn_until_records(before + 5);
    reads_->drain();
    std::vector<interp::RawFrame> frames;
    EXPECT_TRUE(reads_->take_oldest(tid, &frames, result)) << "no record in 5 s of CPU";
    forget_ruby_process(*reads_, ::getpid());
    reads_->forget_thread(tid);
    return frames;
  }

};

TEST_F(RubyBpf, ControlFramesInnermostFirstWithoutCAndDummyFramesFinishAsEntry) {
  // dummy <- <main> (finish) <- c_path <- Array#map (C) <- block (finish) <- keyed
  auto thread = std::make_unique<FakeThread>();
  thread->set(0, 0, 0, layout().frame_magic_dummy);
  thread->set(1, 0x1001, 0x15E01, kMethod | layout().frame_flag_finish);
  thread->set(2, 0x1002, 0x15E02, kMethod);
  thread->set(3, 0, 0, kCFunc | layout().frame_flag_cframe);
  thread->set(4, 0x1004, 0x15E04, kBlock | layout().frame_flag_finish);
  thread->set(5, 0x1005, 0x15E05, kMethod);
  thread->point(5);
  interp::WalkResult result;
  const auto frames = walk(*thread, &result);
  ASSERT_EQ(result.status, interp::WalkStatus::kComplete);
  ASSERT_EQ(frames.size(), 4u);
  const uint64_t want[] = {0x15E05, 0x15E04, 0x15E02, 0x15E01};
  const uint32_t entry[] = {0, interp::kEntryFrame, 0, interp::kEntryFrame};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(frames[i].code, want[i]) << i;
    EXPECT_EQ(frames[i].instruction, want[i] - 0x15E05 + 0x1005) << i;
    EXPECT_EQ(frames[i].flags, entry[i]) << i;
  }
}

TEST_F(RubyBpf, TheThreadsContextIsReadAtEachSample) {
  // A Fiber switch gives the thread another context: the program reads
  // rb_thread_t.ec at the sample, not once.
  auto thread = std::make_unique<FakeThread>();
  thread->set(0, 0x2000, 0xF1BE0, kMethod | layout().frame_flag_finish);
  thread->set(1, 0x2001, 0xF1BE1, kMethod);
  thread->point(1);
  interp::WalkResult result;
  ASSERT_EQ(walk(*thread, &result).size(), 2u);
  thread->point(0);
  const auto frames = walk(*thread, &result);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].code, 0xF1BE0u);
}

TEST_F(RubyBpf, AContextWhoseFrameIsOutsideItsStackIsAReadError) {
  auto thread = std::make_unique<FakeThread>();
  thread->set(0, 0x3000, 0x3, kMethod);
  thread->point(0);
  thread->ec[layout().ec_cfp / 8] = 0x10;  // not in the VM stack
  interp::WalkResult result;
  EXPECT_TRUE(walk(*thread, &result).empty());
  EXPECT_EQ(result.status, interp::WalkStatus::kReadError);
}

}  // namespace
}  // namespace profiling::outside
