// ASYNC-SIGNAL-SAFE: everything here (raw system calls, no allocation).
#include "perf/event.h"

#include <fcntl.h>
#include <sys/syscall.h>

#include "base/raw_syscall.h"

namespace profiling::perf {

perf_event_attr EventSpec::attr() const {
  perf_event_attr a{};
  a.size = sizeof a;
  a.type = type;
  a.config = config;
  a.sample_period = period_ns;
  a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | sample_type;
  if (regs_user != 0) {
    a.sample_type |= PERF_SAMPLE_REGS_USER;
    a.sample_regs_user = regs_user;
  }
  if (stack_bytes != 0) {
    a.sample_type |= PERF_SAMPLE_STACK_USER;
    a.sample_stack_user = stack_bytes;
  }
  if (a.sample_type & PERF_SAMPLE_READ) a.read_format = read_format;
  if (kernel_callchain) {
    a.sample_type |= PERF_SAMPLE_CALLCHAIN;
    a.exclude_callchain_user = 1;
  }
  a.sample_id_all = 1;  // LOST, MMAP2, COMM, FORK and EXIT name their thread
  a.exclude_kernel = user_only;
  a.exclude_hv = 1;
  a.inherit = inherit;
  a.inherit_thread = inherit_thread;
  a.inherit_stat = inherit_stat;
  a.remove_on_exec = remove_on_exec;
  a.disabled = disabled;
  a.enable_on_exec = enable_on_exec;
  if (track_tasks) {
    a.mmap = 1;
    a.mmap2 = 1;
    a.comm = 1;
    a.comm_exec = 1;
    a.task = 1;
    a.build_id = 1;
  }
  a.watermark = 1;
  a.wakeup_watermark = wakeup_bytes != 0 ? wakeup_bytes : 0xffffffff;
  return a;
}

long open_event(const perf_event_attr& attr, pid_t pid, int cpu, int group_fd) {
  // Five arguments: the raw helper takes three, so the sixth-register form
  // is written here.
  long result;
  register long r10 asm("r10") = group_fd;
  register long r8 asm("r8") = PERF_FLAG_FD_CLOEXEC;
  asm volatile("syscall"
               : "=a"(result)
               : "0"(static_cast<long>(SYS_perf_event_open)), "D"(&attr), "S"(static_cast<long>(pid)),
                 "d"(static_cast<long>(cpu)), "r"(r10), "r"(r8)
               : "rcx", "r11", "memory");
  return result;
}

unsigned online_cpus(int* cpus, unsigned max) {
  const long fd = base::raw_syscall3(SYS_open, reinterpret_cast<long>("/sys/devices/system/cpu/online"),
                                     O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return 0;
  char text[512];
  const long got = base::raw_read(static_cast<int>(fd), text, sizeof text - 1);
  base::raw_syscall3(SYS_close, fd, 0, 0);
  if (got <= 0) return 0;
  text[got] = '\0';
  // "0-3,8,10-11\n"
  unsigned count = 0;
  const char* p = text;
  while (*p >= '0' && *p <= '9') {
    long first = 0;
    while (*p >= '0' && *p <= '9') first = first * 10 + (*p++ - '0');
    long last = first;
    if (*p == '-') {
      ++p;
      last = 0;
      while (*p >= '0' && *p <= '9') last = last * 10 + (*p++ - '0');
    }
    for (long cpu = first; cpu <= last && count < max; ++cpu) cpus[count++] = static_cast<int>(cpu);
    if (*p == ',') ++p;
  }
  return count;
}

}  // namespace profiling::perf
