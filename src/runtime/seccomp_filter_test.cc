#include "runtime/seccomp_filter.h"

#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/syscall.h>

#include <iterator>

namespace {

using profiling::runtime::seccomp_filter_allows_runtime;
using profiling::runtime::seccomp_filter_verdict;

constexpr unsigned kKill = 0x80000000U;  // SECCOMP_RET_KILL_PROCESS

TEST(SeccompFilter, KillingOneCallRefusesOnlyThatCall) {
  struct sock_filter code[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_perf_event_open, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, kKill),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog filter = {static_cast<unsigned short>(std::size(code)), code};
  EXPECT_EQ(seccomp_filter_verdict(&filter, __NR_perf_event_open), kKill);
  EXPECT_EQ(seccomp_filter_verdict(&filter, __NR_write), SECCOMP_RET_ALLOW);
  // perf_event_open is not among what the runtime calls after a filter.
  EXPECT_TRUE(seccomp_filter_allows_runtime(&filter));
}

TEST(SeccompFilter, KillingSigreturnOrSigactionRefusesTheRuntime) {
  for (const int nr : {__NR_rt_sigreturn, __NR_rt_sigaction, __NR_openat}) {
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<unsigned>(nr), 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog filter = {static_cast<unsigned short>(std::size(code)), code};
    EXPECT_FALSE(seccomp_filter_allows_runtime(&filter)) << nr;
  }
}

TEST(SeccompFilter, ArchCheckAndLogAllowTheRuntime) {
  struct sock_filter code[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, kKill),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_LOG),
  };
  struct sock_fprog filter = {static_cast<unsigned short>(std::size(code)), code};
  EXPECT_TRUE(seccomp_filter_allows_runtime(&filter));
}

TEST(SeccompFilter, ArgumentChecksAndBadProgramsCountAsRefusing) {
  // write allowed to fd 1 only: tried with zero arguments, refused.
  struct sock_filter by_argument[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 1, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_RET | BPF_K, kKill),
  };
  struct sock_fprog filter = {static_cast<unsigned short>(std::size(by_argument)), by_argument};
  EXPECT_FALSE(seccomp_filter_allows_runtime(&filter));
  // A load past seccomp_data, a program that runs off its end, none at all.
  struct sock_filter past[] = {BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 4096), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
  struct sock_fprog past_filter = {2, past};
  EXPECT_EQ(seccomp_filter_verdict(&past_filter, __NR_write), kKill);
  struct sock_filter off_end[] = {BPF_STMT(BPF_LD | BPF_IMM, 0)};
  struct sock_fprog off_end_filter = {1, off_end};
  EXPECT_EQ(seccomp_filter_verdict(&off_end_filter, __NR_write), kKill);
  EXPECT_FALSE(seccomp_filter_allows_runtime(nullptr));
}

}  // namespace
