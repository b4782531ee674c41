// The ring engine's events and rings (perf_ring.h): the sampling events as
// values (perf::EventSpec), one per online CPU for each thread that exists
// when they open, each CPU's ring mapped (the mapping holds the event: no
// descriptor kept), the other threads' events writing into it
// (PERF_EVENT_IOC_SET_OUTPUT); a smaller ring where locked memory is short;
// what was refused, in words.
//
// ASYNC-SIGNAL-SAFE: record_format, open_event, max_sample_bytes,
// list_threads, open_rings_as_large_as_allowed and what they call
// (perf_event_open, mmap, ioctl, getdents64, close: a deferred ring opens
// from the handler, which saves errno), close_extras. The rest
// (sampling_spec, probe_event, unmap_rings, the descriptions) runs under the
// control lock.
#include <fcntl.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "perf/event.h"
#include "perf/records.h"
#include "sampler/internal/perf_ring_state.h"

namespace profiling::sampler::ring {

constinit Ring g_rings[kMaxRings];
constinit std::atomic<unsigned> g_ring_count{0};
constinit size_t g_map_bytes = 0;
constinit Extra g_extra[kMaxExtra];
constinit unsigned g_extra_count = 0;
constinit bool g_sample_read = false;
constinit uint32_t g_stack_bytes = 0;
constinit uint64_t g_thread_drain_ns = 0;

perf::EventSpec sampling_spec(uint64_t period_ns, bool sample_read, uint32_t stack_bytes) {
  perf::EventSpec spec;
  spec.period_ns = period_ns;
  spec.sample_type = sample_read ? PERF_SAMPLE_READ : 0;
  if (stack_bytes != 0) {
    // What the unwinder needs, taken by the kernel at the sample: the
    // thread's registers and the top of its stack, unwound at the drain.
    spec.regs_user = perf::kUnwindRegisters;
    spec.stack_bytes = stack_bytes;
  }
  spec.inherit = true;         // threads created later carry the event
  spec.inherit_thread = true;  // ...but not a fork child, which opens its own
  spec.remove_on_exec = true;  // nor the image an exec starts
  spec.wakeup_bytes = 0;       // no reader waits: never wake one
  return spec;
}

perf::RecordFormat record_format() {
  return perf::RecordFormat::of(sampling_spec(g_period_ns, g_sample_read, g_stack_bytes).attr());
}

long open_event(pid_t tid, int cpu, uint64_t period_ns, bool sample_read) {
  return perf::open_event(sampling_spec(period_ns, sample_read, g_stack_bytes).attr(), tid, cpu);
}

// The stack a record carries in a ring of data_size bytes at period_ns
// (kMaxStackBytes): room for 32 records, and for four times what
// one CPU writes in a kernel tick (4 ms with Debian's CONFIG_HZ=250): each
// thread's drain timer fires every quarter ring of its CPU time, and the
// kernel sees a CPU-time timer expire at its tick, so a drain comes at
// most a tick late. (Before issue 20 the drains came from a process timer
// checked late beside busy loops, and the ring had to hold four 10 ms
// drain intervals: 3.2 KiB copies at 4 kHz, which cut python3's stacks;
// now 8 KiB there, as perf record --call-graph dwarf takes.)
uint32_t stack_bytes_for(size_t data_size, uint64_t period_ns) {
  constexpr uint64_t kKernelTickNs = 4'000'000;
  const uint64_t per_tick = (kKernelTickNs + period_ns - 1) / period_ns;
  uint64_t records = 4 * per_tick;
  if (records < kStackRecordsPerRing) records = kStackRecordsPerRing;
  uint64_t bytes = data_size / records;
  bytes = bytes > 128 ? bytes - 128 : 0;  // the record's other fields
  if (bytes > kMaxStackBytes) bytes = kMaxStackBytes;
  return static_cast<uint32_t>(bytes & ~uint64_t{7});
}

uint32_t stack_bytes_with(unsigned pages, uint64_t period_ns) {
  if (g_stack_setting != 0) return g_stack_setting;
  const uint32_t bytes = stack_bytes_for(static_cast<size_t>(pages) * kPage, period_ns);
  return bytes < kMinStackBytes ? kMinStackBytes : bytes;
}

// Header, ip, pid/tid, value, abi, three registers, size, the stack,
// dyn_size.
size_t max_sample_bytes() {
  return g_stack_bytes == 0 ? kSampleBytes : kSampleBytes + 8 + 3 * 8 + 8 + g_stack_bytes + 8;
}

unsigned list_threads(pid_t* tids, unsigned max) {
  struct Entry {
    uint64_t inode;
    int64_t offset;
    unsigned short length;
    unsigned char type;
    char name[1];
  };
  const pid_t self = static_cast<pid_t>(::getpid());
  unsigned n = 0;
  tids[n++] = self;
  const int fd = ::open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return n;
  // Static: the callers are serialized (the control lock, or the state
  // kOpening), and a handler's stack may be small.
  alignas(8) static char buffer[2048];
  while (true) {
    const long got = ::syscall(SYS_getdents64, fd, buffer, sizeof buffer);
    if (got <= 0) break;
    for (long at = 0; at < got;) {
      const auto* entry = reinterpret_cast<const Entry*>(buffer + at);
      at += entry->length;
      pid_t tid = 0;
      const char* p = entry->name;
      for (; *p >= '0' && *p <= '9'; ++p) tid = tid * 10 + (*p - '0');
      if (*p == '\0' && tid > 0 && tid != self && n < max) tids[n++] = tid;
    }
  }
  ::close(fd);
  return n;
}

int probe_event(pid_t tid, uint64_t period_ns, std::string* why) {
  long probe = open_event(tid, g_ncpu > 0 ? g_cpus[0] : 0, period_ns, true);
  if (probe == -EINVAL) probe = open_event(tid, g_ncpu > 0 ? g_cpus[0] : 0, period_ns, false);
  if (probe < 0) {
    const int error = static_cast<int>(-probe);
    *why = describe_failure(OpenFailure{OpenStep::open_event, error, 0});
    return error;
  }
  ::close(static_cast<int>(probe));
  return 0;
}

void close_extras() {
  for (unsigned i = 0; i < g_extra_count; ++i) ::close(g_extra[i].fd);
  g_extra_count = 0;
}

void unmap_rings(bool mapped_here) {
  const unsigned count = g_ring_count.load(std::memory_order_relaxed);
  g_ring_count.store(0, std::memory_order_release);
  for (unsigned i = 0; i < count; ++i) {
    Ring& ring = g_rings[i];
    perf_event_mmap_page* page = ring.page.exchange(nullptr, std::memory_order_acq_rel);
    if (!mapped_here) {
      // A fork child: the thread that held the ring at the fork is not
      // here, and the mapping was not copied.
      ring.busy.store(false, std::memory_order_relaxed);
      ring.pending_lost = 0;
      continue;
    }
    // A handler in another thread may be reading it: wait until it is done.
    bool expected = false;
    while (!ring.busy.compare_exchange_weak(expected, true, std::memory_order_acquire)) {
      expected = false;
      sched_yield();
    }
    ring.pending_lost = 0;
    ring.busy.store(false, std::memory_order_release);
    if (page != nullptr) ::munmap(page, g_map_bytes);
  }
}

namespace {

// Every CPU's event and ring, with data_pages pages per ring; the drain
// interval. The drain timer, the shares and the scratch space exist
// already (perf_ring.cc, prepare_process).
int open_rings(uint64_t period_ns, unsigned data_pages, OpenFailure* failure) {
  g_map_bytes = (1 + static_cast<size_t>(data_pages)) * kPage;
  const size_t data_size = static_cast<size_t>(data_pages) * kPage;
  // The threads there are now; later ones inherit the events.
  static pid_t tids[kMaxExtra];
  const unsigned ntids = list_threads(tids, kMaxExtra);
  // PERF_SAMPLE_READ on inherited events: Linux 6.12; without it (the
  // first open says EINVAL) each sample weighs one period.
  g_sample_read = true;
  unsigned rings = 0;
  int error = 0;
  for (unsigned k = 0; k < g_ncpu && error == 0; ++k) {
    int owner = -1;
    for (unsigned t = 0; t < ntids; ++t) {
      long fd = open_event(tids[t], g_cpus[k], period_ns, g_sample_read);
      if (fd == -EINVAL && g_sample_read && rings == 0 && owner < 0) {
        g_sample_read = false;
        fd = open_event(tids[t], g_cpus[k], period_ns, false);
      }
      if (fd < 0) {
        if (fd == -ENODEV) break;  // the CPU went offline meanwhile
        if (fd == -ESRCH) continue;  // the thread ended meanwhile
        error = static_cast<int>(-fd);
        *failure = OpenFailure{OpenStep::open_event, error, 0};
        break;
      }
      if (owner < 0) {
        void* map = ::mmap(nullptr, g_map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, static_cast<int>(fd), 0);
        if (map == MAP_FAILED) {
          error = errno;
          *failure = OpenFailure{OpenStep::mmap, error, g_map_bytes};
          ::close(static_cast<int>(fd));
          break;
        }
        Ring& ring = g_rings[rings];
        ring.data_size = data_size;
        ring.scratch = g_scratch != nullptr ? g_scratch + g_scratch_bytes * rings : nullptr;
        ring.busy.store(false, std::memory_order_relaxed);
        ring.page.store(static_cast<perf_event_mmap_page*>(map), std::memory_order_release);
        ++rings;
        g_ring_count.store(rings, std::memory_order_release);
        owner = static_cast<int>(fd);
      } else if (::ioctl(static_cast<int>(fd), PERF_EVENT_IOC_SET_OUTPUT, owner) != 0 ||
                 g_extra_count == kMaxExtra) {
        error = errno != 0 ? errno : ENOSPC;
        *failure = OpenFailure{OpenStep::set_output, error, 0};
        ::close(static_cast<int>(fd));
        break;
      } else {
        g_extra[g_extra_count++] = Extra{tids[t], static_cast<int>(fd)};
      }
    }
    // The mapping holds the event: no descriptor a program could close.
    if (owner >= 0) ::close(owner);
  }
  if (error == 0 && rings == 0) {
    error = ENODEV;
    *failure = OpenFailure{OpenStep::no_cpu, error, 0};
  }
  if (error != 0) {
    close_extras();
    unmap_rings(true);
    return error;
  }
  // The drain interval: a stretch of the process's CPU time in which no
  // ring can fill, even if one CPU took all of it (each ring gets at most
  // one record per period of that CPU's time), half the ring's records of
  // it.
  const uint64_t records = data_size / (g_stack_bytes != 0 ? max_sample_bytes()
                                        : g_sample_read  ? kSampleBytes
                                                         : kSampleBytesWithoutRead);
  uint64_t every = period_ns * (records / 2);
  if (every < 10'000'000) every = 10'000'000;
  // Each thread's drain: with stacks, a quarter ring of its time (several
  // threads sharing a CPU fill its ring in turn; stack_bytes_for sized the
  // ring for it), at least a millisecond (the kernel checks CPU-time timers
  // at its tick anyway); never more than 25 ms of it, so the preload
  // runtime's checkpoints (run at the drains, at their own cadence:
  // max(50 ms, 1/32 of the CPU time)) are never late by much.
  uint64_t per_thread = g_stack_bytes != 0 ? period_ns * (records / 4) : every;
  if (per_thread < 1'000'000) per_thread = 1'000'000;
  if (per_thread > 25'000'000) per_thread = 25'000'000;
  g_thread_drain_ns = per_thread;
  return 0;
}

std::string describe_mmap_refusal(int error, size_t bytes) {
  char line[256];
  std::snprintf(line, sizeof line, "perf ring buffer: mmap of %zu KiB: %s", bytes / 1024, std::strerror(error));
  std::string why = line;
  if (error == EPERM || error == ENOMEM) {
    // The kernel's limits on perf's locked memory (perf_mmap): the user's
    // kernel.perf_event_mlock_kb per CPU, then RLIMIT_MEMLOCK.
    char mlock[32] = "?";
    int fd = ::open("/proc/sys/kernel/perf_event_mlock_kb", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      ssize_t n = ::read(fd, mlock, sizeof mlock - 1);
      ::close(fd);
      mlock[n > 0 ? n : 0] = '\0';
      for (char* c = mlock; *c; ++c)
        if (*c == '\n') *c = '\0';
    }
    rlimit limit{};
    ::getrlimit(RLIMIT_MEMLOCK, &limit);
    char rl[32];
    if (limit.rlim_cur == RLIM_INFINITY)
      std::snprintf(rl, sizeof rl, "unlimited");
    else
      std::snprintf(rl, sizeof rl, "%llu KiB", static_cast<unsigned long long>(limit.rlim_cur / 1024));
    why += " (locked memory: kernel.perf_event_mlock_kb = ";
    why += mlock;
    why += " per CPU for all of the user's rings, then ulimit -l = ";
    why += rl;
    why += ")";
  }
  return why;
}

}  // namespace

// open_rings at the size chosen at start; where locked memory is short, a
// smaller ring (and stack copy) drains as often, which is still better than
// a signal per sample: halved down to kMinStackBytes.
int open_rings_as_large_as_allowed(uint64_t period_ns, OpenFailure* failure) {
  unsigned pages = g_data_pages;
  while (true) {
    if (g_stack_bytes != 0) g_stack_bytes = stack_bytes_with(pages, period_ns);
    const int error = open_rings(period_ns, pages, failure);
    if (error == 0) {
      g_data_pages = pages;
      return 0;
    }
    if (failure->step != OpenStep::mmap || !g_may_halve ||
        stack_bytes_for(static_cast<size_t>(pages / 2) * kPage, period_ns) < kMinStackBytes)
      return error;
    pages /= 2;
  }
}

std::string describe_failure(const OpenFailure& failure) {
  switch (failure.step) {
    case OpenStep::open_event:
      return std::string("perf_event_open(task-clock, inherit, per CPU): ") + std::strerror(failure.error);
    case OpenStep::mmap: return describe_mmap_refusal(failure.error, failure.bytes);
    case OpenStep::set_output:
      return std::string("perf ring buffer: PERF_EVENT_IOC_SET_OUTPUT: ") + std::strerror(failure.error);
    case OpenStep::no_cpu: return "perf ring buffer: no online CPU could be opened";
    case OpenStep::none: break;
  }
  return "perf ring buffer: not opened";
}

}  // namespace profiling::sampler::ring
