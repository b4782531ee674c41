#include "runtime/seccomp_filter.h"

#include <linux/audit.h>
#include <linux/seccomp.h>
#include <sys/syscall.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#ifndef SECCOMP_RET_KILL_PROCESS
#define SECCOMP_RET_KILL_PROCESS 0x80000000U
#endif
#ifndef SECCOMP_RET_ACTION_FULL
#define SECCOMP_RET_ACTION_FULL 0xffff0000U
#endif
#ifndef SECCOMP_RET_LOG
#define SECCOMP_RET_LOG 0x7ffc0000U
#endif

namespace profiling::runtime {
namespace {

// What the runtime may still call after a filter (read off strace of every
// clock's run after a filter, and the files that make each call: the
// handler's return and masks, the dump, the timers and counters, the wall
// clock's watcher, the crash path that restores a default and raises).
constexpr int kRuntimeCalls[] = {
    SYS_rt_sigreturn, SYS_rt_sigprocmask, SYS_rt_sigaction, SYS_sigaltstack, SYS_tgkill,   SYS_getpid,
    SYS_gettid,       SYS_getppid,        SYS_openat,       SYS_close,       SYS_read,     SYS_pread64,
    SYS_write,        SYS_pwrite64,       SYS_renameat,     SYS_unlinkat,    SYS_fsync,    SYS_newfstatat,
    SYS_fstat,        SYS_fcntl,          SYS_readlink,     SYS_getdents64,  SYS_mmap,     SYS_munmap,
    SYS_madvise,      SYS_ioctl,          SYS_timer_settime, SYS_timer_delete, SYS_clock_gettime,
    SYS_clock_nanosleep, SYS_futex,       SYS_exit,         SYS_exit_group,
};

// A classic BPF machine over one seccomp_data (the subset seccomp accepts:
// Documentation/networking/filter.rst, kernel/seccomp.c seccomp_check_filter).
unsigned run(const struct sock_fprog* filter, const struct seccomp_data& data) {
  uint32_t a = 0, x = 0, memory[BPF_MEMWORDS] = {};
  const auto* bytes = reinterpret_cast<const unsigned char*>(&data);
  for (unsigned pc = 0; pc < filter->len; ++pc) {
    const struct sock_filter& in = filter->filter[pc];
    const uint32_t source = BPF_SRC(in.code) == BPF_X ? x : in.k;
    switch (BPF_CLASS(in.code)) {
      case BPF_LD:
        if (in.code == (BPF_LD | BPF_W | BPF_ABS)) {
          if (in.k % 4 != 0 || in.k + 4 > sizeof data) return SECCOMP_RET_KILL_PROCESS;
          std::memcpy(&a, bytes + in.k, 4);
        } else if (in.code == (BPF_LD | BPF_W | BPF_LEN)) {
          a = sizeof data;
        } else if (in.code == (BPF_LD | BPF_IMM)) {
          a = in.k;
        } else if (in.code == (BPF_LD | BPF_MEM) && in.k < BPF_MEMWORDS) {
          a = memory[in.k];
        } else {
          return SECCOMP_RET_KILL_PROCESS;
        }
        break;
      case BPF_LDX:
        if (in.code == (BPF_LDX | BPF_W | BPF_LEN)) x = sizeof data;
        else if (in.code == (BPF_LDX | BPF_IMM)) x = in.k;
        else if (in.code == (BPF_LDX | BPF_MEM) && in.k < BPF_MEMWORDS) x = memory[in.k];
        else return SECCOMP_RET_KILL_PROCESS;
        break;
      case BPF_ST:
      case BPF_STX:
        if (in.k >= BPF_MEMWORDS) return SECCOMP_RET_KILL_PROCESS;
        memory[in.k] = BPF_CLASS(in.code) == BPF_ST ? a : x;
        break;
      case BPF_ALU:
        switch (BPF_OP(in.code)) {
          case BPF_ADD: a += source; break;
          case BPF_SUB: a -= source; break;
          case BPF_MUL: a *= source; break;
          case BPF_DIV: if (source == 0) return SECCOMP_RET_KILL_PROCESS; a /= source; break;
          case BPF_MOD: if (source == 0) return SECCOMP_RET_KILL_PROCESS; a %= source; break;
          case BPF_AND: a &= source; break;
          case BPF_OR: a |= source; break;
          case BPF_XOR: a ^= source; break;
          case BPF_LSH: a = source < 32 ? a << source : 0; break;
          case BPF_RSH: a = source < 32 ? a >> source : 0; break;
          case BPF_NEG: a = 0 - a; break;
          default: return SECCOMP_RET_KILL_PROCESS;
        }
        break;
      case BPF_JMP: {
        if (BPF_OP(in.code) == BPF_JA) {
          pc += in.k;
          break;
        }
        bool taken;
        switch (BPF_OP(in.code)) {
          case BPF_JEQ: taken = a == source; break;
          case BPF_JGT: taken = a > source; break;
          case BPF_JGE: taken = a >= source; break;
          case BPF_JSET: taken = (a & source) != 0; break;
          default: return SECCOMP_RET_KILL_PROCESS;
        }
        pc += taken ? in.jt : in.jf;
        break;
      }
      case BPF_RET:
        return BPF_RVAL(in.code) == BPF_A ? a : in.k;
      case BPF_MISC:
        if (BPF_MISCOP(in.code) == BPF_TAX) x = a;
        else a = x;
        break;
      default:
        return SECCOMP_RET_KILL_PROCESS;
    }
  }
  return SECCOMP_RET_KILL_PROCESS;  // ran off its end
}

}  // namespace

unsigned seccomp_filter_verdict(const struct sock_fprog* filter, int nr) {
  if (filter == nullptr || filter->filter == nullptr || filter->len == 0) return SECCOMP_RET_KILL_PROCESS;
  struct seccomp_data data = {};
  data.nr = nr;
  data.arch = AUDIT_ARCH_X86_64;
  return run(filter, data);
}

bool seccomp_filter_allows_runtime(const struct sock_fprog* filter) {
  for (const int nr : kRuntimeCalls) {
    const unsigned action = seccomp_filter_verdict(filter, nr) & SECCOMP_RET_ACTION_FULL;
    if (action != SECCOMP_RET_ALLOW && action != SECCOMP_RET_LOG) return false;
  }
  return true;
}

}  // namespace profiling::runtime
