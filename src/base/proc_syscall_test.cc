#include "base/proc_syscall.h"

#include <gtest/gtest.h>

namespace profiling::base {
namespace {

BlockedRegisters parsed(std::string_view text) {
  BlockedRegisters regs{0xdead, 0xbeef};
  EXPECT_TRUE(blocked_registers_from_syscall_text(text, &regs)) << text;
  return regs;
}

bool refused(std::string_view text) {
  BlockedRegisters regs{0xdead, 0xbeef};
  const bool ok = blocked_registers_from_syscall_text(text, &regs);
  EXPECT_EQ(regs.pc, 0xdeadu) << text;  // untouched
  EXPECT_EQ(regs.sp, 0xbeefu) << text;
  return !ok;
}

// The shapes proc(5) documents for /proc/<pid>/syscall: sp then pc last.
TEST(ProcSyscall, SpAndPcFromEachShapeOfSyscallText) {
  EXPECT_TRUE(refused("running\n"));
  BlockedRegisters off_cpu = parsed("-1 0x7ffd2c1e0a38 0x55d0c0a01234\n");
  EXPECT_EQ(off_cpu.sp, 0x7ffd2c1e0a38u);
  EXPECT_EQ(off_cpu.pc, 0x55d0c0a01234u);
  BlockedRegisters in_poll = parsed("7 0x0 0x0 0x12c 0x0 0x0 0x0 0x7f3b5a1ffe10 0x7f3b5a91a99f\n");  // poll(NULL, 0, 300)
  EXPECT_EQ(in_poll.sp, 0x7f3b5a1ffe10u);
  EXPECT_EQ(in_poll.pc, 0x7f3b5a91a99fu);
  // clock_nanosleep(CLOCK_REALTIME, 0, &ts, &ts) as the kernel writes it.
  BlockedRegisters in_sleep = parsed("230 0x0 0x0 0x7ffc7d0e4f40 0x7ffc7d0e4f40 0x0 0x0 0x7ffc7d0e4f08 0x7f9e0a2e4a95");
  EXPECT_EQ(in_sleep.sp, 0x7ffc7d0e4f08u);
  EXPECT_EQ(in_sleep.pc, 0x7f9e0a2e4a95u);
}

TEST(ProcSyscall, AnythingElseHasNoRegisters) {
  EXPECT_TRUE(refused(""));
  EXPECT_TRUE(refused("\n"));
  EXPECT_TRUE(refused("7"));                                    // a lone number: in a system call, no registers
  EXPECT_TRUE(refused("0x7f3b5a91a99f"));                       // a pc without sp
  EXPECT_TRUE(refused(" 0x7f3b5a91a99f"));
  EXPECT_TRUE(refused("7 0x0 zz"));
  EXPECT_TRUE(refused("7 zz 0x10"));                            // sp not hex
  EXPECT_TRUE(refused("7 0x0 0x"));
  EXPECT_TRUE(refused("7 0x0 0x12345678901234567"));            // more than 64 bits
  EXPECT_TRUE(refused("7 0x12345678901234567 0x10"));
  EXPECT_TRUE(refused("7 0x0 0xABC"));                          // the kernel writes lower case
}

}  // namespace
}  // namespace profiling::base
