#include "outside/sample_stack.h"

#include <gtest/gtest.h>
#include <linux/perf_event.h>

#include <cstdint>
#include <vector>

#include "format/profile.h"
#include "perf/event.h"

namespace profiling::outside {
namespace {

// A kernel sample of a thread the kernel gives no user registers for (an
// exiting thread after exit_mm: per-CPU events sample it in exit_notify;
// a CI run found its sample's IP a second time as the root, unnamed,
// "[unknown]"): the kernel's chain alone, marked truncated.
TEST(SampleStack, KernelSampleWithoutUserRegistersIsTheKernelChainAlone) {
  const std::vector<uint64_t> chain = {static_cast<uint64_t>(PERF_CONTEXT_KERNEL), 0xffffffff8220342e,
                                       0xffffffff8135fc2d, 0xffffffff813601e8};
  perf::Sample s;
  s.ip = chain[1];
  s.callchain = chain.data();
  s.callchain_count = chain.size();
  CodeMap code;
  const SampleStack stack = unwind_sample(s, /*kernel=*/true, code, 64);
  EXPECT_EQ(stack.leaf, 0xffffffff8220342eu);
  EXPECT_EQ(stack.callers, (std::vector<uint64_t>{0xffffffff8135fc2c, 0xffffffff813601e7}));
  EXPECT_EQ(stack.kernel_frames.size(), 3u);
  EXPECT_TRUE(stack.truncated);
}

// A kernel sample in execve after the new image replaced the old one
// (load_elf_binary -> map_vdso): its user registers are still the old
// image's, at an address the new image has no code at (a CI run found its
// root "[unknown]"). The kernel's chain alone, marked truncated; where the
// user PC is the image's code, the user stack follows the chain.
TEST(SampleStack, KernelSampleWhoseUserPcIsNoCodeOfTheImageIsTheKernelChainAlone) {
  const std::vector<uint64_t> chain = {static_cast<uint64_t>(PERF_CONTEXT_KERNEL), 0xffffffff8220342e,
                                       0xffffffff8135fc2d};
  perf::Sample s;
  s.ip = chain[1];
  s.callchain = chain.data();
  s.callchain_count = chain.size();
  s.reg_count = 3;
  s.regs[perf::kUnwindRegisterIp] = 0x7f0000001234;  // the old image's libc
  s.regs[perf::kUnwindRegisterSp] = 0x7ffc00000000;
  CodeMap code;
  MappedCode program;
  program.start = 0x400000, program.end = 0x401000, program.path = "/bin/new";
  code.add(program);
  SampleStack stack = unwind_sample(s, /*kernel=*/true, code, 64);
  EXPECT_EQ(stack.leaf, 0xffffffff8220342eu);
  EXPECT_EQ(stack.callers, (std::vector<uint64_t>{0xffffffff8135fc2c}));
  EXPECT_TRUE(stack.truncated);

  s.regs[perf::kUnwindRegisterIp] = 0x400800;  // the image's code: its caller
  stack = unwind_sample(s, /*kernel=*/true, code, 64);
  ASSERT_EQ(stack.callers.size(), 2u);
  EXPECT_EQ(stack.callers[1], 0x4007ffu);
}

// Without the kernel's chain either, the sample is "[kernel]" alone.
TEST(SampleStack, KernelSampleWithoutChainOrRegistersIsTheKernelAlone) {
  perf::Sample s;
  s.ip = 0xffffffff8220342e;
  CodeMap code;
  const SampleStack stack = unwind_sample(s, /*kernel=*/true, code, 64);
  EXPECT_EQ(stack.leaf, format::kKernelAddress);
  EXPECT_TRUE(stack.callers.empty());
  EXPECT_TRUE(stack.truncated);
}

// A user sample without registers keeps its IP as the leaf.
TEST(SampleStack, UserSampleWithoutRegistersIsItsIp) {
  perf::Sample s;
  s.ip = 0x401000;
  CodeMap code;
  const SampleStack stack = unwind_sample(s, /*kernel=*/false, code, 64);
  EXPECT_EQ(stack.leaf, 0x401000u);
  EXPECT_TRUE(stack.callers.empty());
  EXPECT_TRUE(stack.truncated);
}

}  // namespace
}  // namespace profiling::outside
