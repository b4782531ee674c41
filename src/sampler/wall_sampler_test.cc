#include "sampler/wall_sampler.h"

#include <gtest/gtest.h>

namespace profiling::sampler {
namespace {

// The three shapes proc(5) documents for /proc/<pid>/syscall.
TEST(WallSampler, PcFromEachShapeOfSyscallText) {
  EXPECT_EQ(blocked_pc_from_syscall_text("running\n"), 0u);
  EXPECT_EQ(blocked_pc_from_syscall_text("-1 0x7ffd2c1e0a38 0x55d0c0a01234\n"), 0x55d0c0a01234u);
  EXPECT_EQ(blocked_pc_from_syscall_text(
                "7 0x0 0x0 0x12c 0x0 0x0 0x0 0x7f3b5a1ffe10 0x7f3b5a91a99f\n"),  // poll(NULL, 0, 300)
            0x7f3b5a91a99fu);
}

TEST(WallSampler, AnythingElseIsNoPc) {
  EXPECT_EQ(blocked_pc_from_syscall_text(""), 0u);
  EXPECT_EQ(blocked_pc_from_syscall_text("7"), 0u);
  EXPECT_EQ(blocked_pc_from_syscall_text("7 0x0 zz"), 0u);
  EXPECT_EQ(blocked_pc_from_syscall_text("7 0x0 0x"), 0u);
  EXPECT_EQ(blocked_pc_from_syscall_text("7 0x0 0x12345678901234567"), 0u);  // more than 64 bits
  EXPECT_EQ(blocked_pc_from_syscall_text("7 0x0 0xABC"), 0u);                // the kernel writes lower case
}

}  // namespace
}  // namespace profiling::sampler
