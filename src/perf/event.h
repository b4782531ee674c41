// perf_event_open(2) events as values: what to count and what each sample
// carries, apart from where the event is opened (a thread, a process tree,
// a CPU) and from who reads it (the preload's ring engine inside the
// program, the outside sampler in `profil run`/`profil attach`). samply's
// perf_event.rs and perf's evsel.c keep the same split.
//
// ASYNC-SIGNAL-SAFE: EventSpec::attr(), open_event() and online_cpus()
// (no allocation, no errno: raw system calls; the preload opens events from
// its handler when a deferred ring opens).
#ifndef PROFIL_PERF_EVENT_H
#define PROFIL_PERF_EVENT_H

#include <linux/perf_event.h>
#include <sys/types.h>

#include <cstdint>

namespace profiling::perf {

// The registers an unwinder starts from (asm/perf_regs.h); the kernel
// writes them in the order of their bits: bp, sp, ip.
inline constexpr uint64_t kUnwindRegisters = (uint64_t{1} << 6) | (uint64_t{1} << 7) | (uint64_t{1} << 8);
inline constexpr unsigned kUnwindRegisterBp = 0, kUnwindRegisterSp = 1, kUnwindRegisterIp = 2;

struct EventSpec {
  // The event counted: the CPU time of the task (software task-clock) by
  // default; another of perf's (a software event such as page-faults, or
  // a hardware counter) for the outside's --event (issue 33).
  uint32_t type = PERF_TYPE_SOFTWARE;
  uint64_t config = PERF_COUNT_SW_TASK_CLOCK;
  // A sample every period_ns of it: nanoseconds of task-clock, or events
  // of another event. Never hypervisor time; kernel time as user_only says.
  uint64_t period_ns = 0;
  // PERF_SAMPLE_* bits beyond IP and TID, which every sample carries.
  uint64_t sample_type = 0;
  // PERF_SAMPLE_REGS_USER's registers (0: none) and PERF_SAMPLE_STACK_USER's
  // bytes (0: none): what an unwinder needs, copied by the kernel.
  uint64_t regs_user = 0;
  uint32_t stack_bytes = 0;
  // PERF_SAMPLE_READ's read_format (only with PERF_SAMPLE_READ).
  uint64_t read_format = 0;
  bool inherit = false;         // threads and children created later carry it
  bool inherit_thread = false;  // ...threads only (Linux 5.13)
  // An inherited event writes a PERF_RECORD_READ with its count into the
  // ring when its task exits (perf record -s): each ended thread's whole
  // CPU time, the part of a period no sample took included.
  bool inherit_stat = false;
  bool remove_on_exec = false;  // gone when the task execs (Linux 5.13)
  bool disabled = false;
  bool enable_on_exec = false;  // counts from the task's next exec on
  // MMAP2 (with build ids where the kernel has them, Linux 5.12), COMM (and
  // its exec flag), FORK and EXIT records: what an observer from outside
  // needs to follow a process tree's mappings.
  bool track_tasks = false;
  // Count user mode only (perf_event_paranoid 2 allows no more to a user
  // without CAP_PERFMON). Where kernel time may be sampled too, its samples
  // still carry the user registers and stack (PERF_SAMPLE_REGS_USER): the
  // system call's caller.
  bool user_only = true;
  // PERF_SAMPLE_CALLCHAIN of the kernel's part only (exclude_callchain_user:
  // the user stack is unwound from the copy): where the kernel lets kernel
  // time be sampled, its functions under the user stack (issue 33).
  bool kernel_callchain = false;
  // Wake a reader polling the ring once this many bytes are pending; 0
  // never wakes one (the ring is drained on the reader's own schedule).
  uint32_t wakeup_bytes = 0;

  perf_event_attr attr() const;
};

// perf_event_open(attr, pid, cpu, group_fd, PERF_FLAG_FD_CLOEXEC): the
// descriptor, or -errno.
long open_event(const perf_event_attr& attr, pid_t pid, int cpu, int group_fd = -1);

// The online CPUs, from /sys/devices/system/cpu/online (sched_getaffinity
// would miss the CPUs a thread may later be moved to): at most max of them
// into cpus; their count, 0 when the file cannot be read.
unsigned online_cpus(int* cpus, unsigned max);

}  // namespace profiling::perf

#endif  // PROFIL_PERF_EVENT_H
