// The unwinder against libgcc's (glibc's backtrace()), which follows the
// same .eh_frame with the full DWARF machine, from inside a signal handler:
// through the handler, the signal frame (__restore_rt), libc (raise) and
// the test's own frames to _start. Plus the depth limit, copied stack
// windows and garbage registers.
#include "unwind/unwinder.h"

#include <execinfo.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "base/safe_access.h"
#include "sampler/handler_stack.h"
#include "unwind/stack_table.h"

namespace profiling::unwind {
namespace {

struct Capture {
  const CodeTable* table = nullptr;
  uint32_t max_depth = kDefaultMaxDepth;
  bool copy_window = false;
  // The handler walks from profil's handler stack (sampler/handler_stack.h),
  // as its work runs in the preload, not from the kernel's frame.
  bool on_handler_stack = false;
  // Filled in the handler.
  uint64_t from_context[kDefaultMaxDepth + 8];
  Stack context_stack;
  uint64_t from_handler[kDefaultMaxDepth + 8];
  Stack handler_stack;
  uint64_t window[kDefaultMaxDepth + 8];
  Stack window_stack;
  void* backtrace_frames[kDefaultMaxDepth + 8];
  int backtrace_depth = 0;
};
Capture* g_capture = nullptr;

// The walk from where it runs, on profil's handler stack: through the
// switch (handler_stack.S's CFI: the caller's frame at rbp) back to the
// handler on the program's stack.
__attribute__((noinline)) void walk_from_handler_stack(void* capture) {
  Capture& c = *static_cast<Capture*>(capture);
  const LiveMemory memory;
  Registers here;
  asm volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2" : "=r"(here.pc), "=r"(here.sp), "=r"(here.fp));
  c.handler_stack = unwind(c.table, memory, here, c.from_handler, c.max_depth);
  c.backtrace_depth = backtrace(c.backtrace_frames, static_cast<int>(c.max_depth));
}

void on_signal(int, siginfo_t*, void* context) {
  Capture& c = *g_capture;
  const LiveMemory memory;
  if (c.on_handler_stack) {
    sampler::run_on_handler_stack(walk_from_handler_stack, &c);
    c.context_stack = unwind(c.table, memory, registers_from_ucontext(context), c.from_context, c.max_depth);
    return;
  }
  Registers here;
  asm volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2" : "=r"(here.pc), "=r"(here.sp), "=r"(here.fp));
  c.handler_stack = unwind(c.table, memory, here, c.from_handler, c.max_depth);
  c.backtrace_depth = backtrace(c.backtrace_frames, static_cast<int>(c.max_depth));
  const Registers interrupted = registers_from_ucontext(context);
  c.context_stack = unwind(c.table, memory, interrupted, c.from_context, c.max_depth);
  if (c.copy_window) {
    // What a perf sample's PERF_SAMPLE_STACK_USER holds: the bytes from rsp
    // up, as far as they are mapped (at most 64 KiB here).
    static uint64_t copy[8192];
    size_t words = 0;
    while (words < 8192 && profil_safe_load_u64(reinterpret_cast<const void*>(interrupted.sp + words * 8), &copy[words]) == 0)
      ++words;
    const StackWindow window(interrupted.sp, copy, words * 8, &memory);
    c.window_stack = unwind(c.table, window, interrupted, c.window, c.max_depth);
  }
}

// A fault in base/safe_access.S's loads (LiveMemory, the window copy)
// resumes at its landing pad, as under the sampler's fault guard
// (sampler::install_fault_guard); any other fault kills. That is all the
// unwinder needs, and so its tests need no layer above their own.
void resume_at_landing_pad(int signo, siginfo_t*, void* context) {
  auto* uc = static_cast<ucontext_t*>(context);
  const uintptr_t pad = base::safe_access_landing_pad(static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]));
  if (pad != 0) {
    uc->uc_mcontext.gregs[REG_RIP] = static_cast<greg_t>(pad);
    return;
  }
  signal(signo, SIG_DFL);  // the fault again, now fatal
}

void install_fault_guard() {
  struct sigaction guard{};
  guard.sa_sigaction = resume_at_landing_pad;
  guard.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&guard.sa_mask);
  sigaction(SIGSEGV, &guard, nullptr);
  sigaction(SIGBUS, &guard, nullptr);
}

volatile int g_sink = 0;
__attribute__((noinline)) void level3() {
  raise(SIGUSR1);
  g_sink = g_sink + 1;  // no tail call: this frame stays on the stack
}
__attribute__((noinline)) void level2() {
  level3();
  g_sink = g_sink + 1;
}
__attribute__((noinline)) void level1() {
  level2();
  g_sink = g_sink + 1;
}
__attribute__((noinline)) void recurse(int n) {
  if (n == 0) raise(SIGUSR1);
  else recurse(n - 1);
  g_sink = g_sink + 1;
}

class Unwinder : public ::testing::Test {
 protected:
  void SetUp() override {
    install_fault_guard();
    table_ = CodeTable::build();
    capture_ = std::make_unique<Capture>();
    capture_->table = table_.get();
    g_capture = capture_.get();
    struct sigaction action{};
    action.sa_sigaction = on_signal;
    action.sa_flags = SA_SIGINFO;
    sigemptyset(&action.sa_mask);
    ASSERT_EQ(sigaction(SIGUSR1, &action, &previous_), 0);
    void* warm[4];
    backtrace(warm, 4);  // libgcc is loaded on first use: not in the handler
  }
  void TearDown() override { sigaction(SIGUSR1, &previous_, nullptr); }

  std::unique_ptr<CodeTable> table_;
  std::unique_ptr<Capture> capture_;
  struct sigaction previous_{};
};

// The walk from the handler and backtrace()'s agree frame for frame (but
// the first: backtrace()'s return address in the handler; ours the
// handler's own PC a few instructions earlier), to the outermost frame.
void expect_handler_walk_is_libgccs(const Capture& c) {
  ASSERT_EQ(static_cast<int>(c.handler_stack.depth), c.backtrace_depth);
  EXPECT_FALSE(c.handler_stack.truncated);
  for (int i = 1; i < c.backtrace_depth; ++i)
    EXPECT_EQ(c.from_handler[i], reinterpret_cast<uint64_t>(c.backtrace_frames[i])) << "frame " << i;
}

TEST_F(Unwinder, MatchesLibgccThroughTheSignalFrameToStart) {
  capture_->copy_window = true;
  level1();
  const Capture& c = *capture_;
  ASSERT_GT(c.backtrace_depth, 6);
  // __restore_rt, the PC raise was interrupted at, level3, level2, level1,
  // the test, ..., _start.
  expect_handler_walk_is_libgccs(c);
  // From the signal's ucontext: the same walk without the handler's frames.
  ASSERT_EQ(static_cast<int>(c.context_stack.depth), c.backtrace_depth - 2);
  EXPECT_FALSE(c.context_stack.truncated);
  for (uint32_t i = 0; i < c.context_stack.depth; ++i) EXPECT_EQ(c.from_context[i], c.from_handler[i + 2]) << i;
  // The same walk over a copy of the stack.
  ASSERT_EQ(c.window_stack.depth, c.context_stack.depth);
  EXPECT_FALSE(c.window_stack.truncated);
  for (uint32_t i = 0; i < c.window_stack.depth; ++i) EXPECT_EQ(c.window[i], c.from_context[i]) << i;
}

// Issue 22: a walk that starts in work run on profil's handler stack (a
// mapping of its own, apart from the program's stack) crosses the switch
// back to the handler and on through the signal frame to _start, frame for
// frame as libgcc's does.
TEST_F(Unwinder, CrossesTheHandlerStackSwitchAndTheSignalFrameToStart) {
  ASSERT_NE(sampler::create_handler_stack().base, nullptr);
  capture_->on_handler_stack = true;
  level1();
  sampler::release_handler_stack();
  const Capture& c = *capture_;
  ASSERT_GT(c.backtrace_depth, 8);
  expect_handler_walk_is_libgccs(c);
  // Past the switch, the handler and the signal frame: the interrupted stack.
  ASSERT_FALSE(c.context_stack.truncated);
  ASSERT_LT(c.context_stack.depth, c.handler_stack.depth);
  const uint32_t handler_frames = c.handler_stack.depth - c.context_stack.depth;
  EXPECT_GE(handler_frames, 4u);  // walk, profil_call_on_stack, run_on_handler_stack, on_signal, __restore_rt
  for (uint32_t i = 0; i < c.context_stack.depth; ++i)
    EXPECT_EQ(c.from_context[i], c.from_handler[i + handler_frames]) << i;
}

TEST_F(Unwinder, TheDepthLimitTruncatesAndTheStackIsKept) {
  recurse(200);
  const Capture& c = *capture_;
  EXPECT_EQ(c.context_stack.depth, kDefaultMaxDepth);
  EXPECT_TRUE(c.context_stack.truncated);
  StackTable* stacks = StackTable::create(64, 1024);
  ASSERT_NE(stacks, nullptr);
  stacks->add(c.from_context, c.context_stack.depth, c.context_stack.truncated, 3);
  int seen = 0;
  stacks->for_each([&](const uint64_t* pcs, uint32_t depth, bool truncated, uint64_t weight, int32_t) {
    ++seen;
    EXPECT_EQ(depth, kDefaultMaxDepth);
    EXPECT_TRUE(truncated);
    EXPECT_EQ(weight, 3u);
    EXPECT_EQ(pcs[0], c.from_context[0]);
  });
  EXPECT_EQ(seen, 1);
  StackTable::destroy(stacks);

  // A smaller limit, set per walk.
  capture_->max_depth = 5;
  recurse(10);
  EXPECT_EQ(c.context_stack.depth, 5u);
  EXPECT_TRUE(c.context_stack.truncated);
}

TEST_F(Unwinder, GarbageRegistersAndStacksNeverCrash) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const LiveMemory memory;
  uint64_t pcs[kDefaultMaxDepth];
  const uint64_t code = reinterpret_cast<uint64_t>(&level2) + 4;

  // rsp in an unmapped page.
  void* gone = mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(gone, MAP_FAILED);
  ASSERT_EQ(munmap(gone, page), 0);
  Stack s = unwind(table_.get(), memory, {code, reinterpret_cast<uint64_t>(gone), reinterpret_cast<uint64_t>(gone)}, pcs,
                   kDefaultMaxDepth);
  EXPECT_EQ(s.depth, 1u);
  EXPECT_TRUE(s.truncated);
  // No PC at all.
  s = unwind(table_.get(), memory, {0, 0, 0}, pcs, kDefaultMaxDepth);
  EXPECT_EQ(s.depth, 0u);
  EXPECT_TRUE(s.truncated);

  // Stacks of random words, some of them pointing back into the stack or
  // at code, walked from random PCs in and out of the known code.
  const size_t words = 4 * page / 8;
  void* area = mmap(nullptr, words * 8, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(area, MAP_FAILED);
  auto* stack = static_cast<uint64_t*>(area);
  const uint64_t base = reinterpret_cast<uint64_t>(area);
  const uint64_t libc = reinterpret_cast<uint64_t>(&qsort);
  std::mt19937_64 random(13);
  for (int trial = 0; trial < 3000; ++trial) {
    for (size_t i = 0; i < words; ++i) {
      switch (random() % 4) {
        case 0: stack[i] = random(); break;
        case 1: stack[i] = base + random() % (words * 8 + 4096); break;  // into the stack, or just past it
        case 2: stack[i] = (trial % 2 ? code : libc) + random() % 4096; break;
        default: stack[i] = 0; break;
      }
    }
    const Registers regs{(trial % 3 == 0 ? libc : code) + random() % 8192, base + (random() % words) * 8,
                         trial % 5 == 0 ? random() : base + random() % (words * 8)};
    s = unwind(table_.get(), memory, regs, pcs, kDefaultMaxDepth);
    EXPECT_LE(s.depth, kDefaultMaxDepth);
  }
  munmap(area, words * 8);
}

TEST_F(Unwinder, TablesCoverTheProgramTheCLibraryAndTheVdso) {
  // Rows come from each object's own CFI, read when a PC is looked up.
  Row row{};
  ASSERT_TRUE(table_->find(reinterpret_cast<uint64_t>(&level1) + 1, &row));
  EXPECT_TRUE(row.rule == Rule::kCfaRsp || row.rule == Rule::kCfaRbp) << static_cast<int>(row.rule);
  ASSERT_TRUE(table_->find(reinterpret_cast<uint64_t>(&qsort) + 1, &row));
  EXPECT_TRUE(row.rule == Rule::kCfaRsp || row.rule == Rule::kCfaRbp) << static_cast<int>(row.rule);
  // Looked up again: the same row (from the cache this time).
  Row again_row{};
  ASSERT_TRUE(table_->find(reinterpret_cast<uint64_t>(&qsort) + 1, &again_row));
  EXPECT_EQ(again_row.rule, row.rule);
  EXPECT_EQ(again_row.cfa_offset, row.cfa_offset);
  const uint64_t vdso = getauxval(AT_SYSINFO_EHDR);
  if (vdso != 0) {
    bool found = false;
    for (const auto& object : table_->objects())
      if (object->start >= vdso && object->start < vdso + 65536) {
        found = true;
        EXPECT_NE(object->eh_frame_hdr, 0u) << "the vdso's .eh_frame_hdr";
      }
    EXPECT_TRUE(found);
  }
  // A PC in no object: not found.
  EXPECT_FALSE(table_->find(4096, &row));
  // Rebuilding reuses every object (nothing was loaded meanwhile).
  const auto again = CodeTable::build(table_.get());
  ASSERT_EQ(again->object_count(), table_->object_count());
  for (size_t i = 0; i < again->object_count(); ++i) EXPECT_EQ(again->objects()[i], table_->objects()[i]);
}

}  // namespace
}  // namespace profiling::unwind
