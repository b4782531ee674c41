// The perf clock through the kernel's ring buffer (perf_ring.h), on the
// perf layer (src/perf/): the events as values (perf::EventSpec), the rings
// walked and their records parsed by perf/ring.h and perf/records.h.
//
// ASYNC-SIGNAL-SAFE: PerfRingEngine::drain, on_drain_timer, open_if_deferred,
// overflowed, descriptor_of, gap_cause, account_process and what they call
// (deliver, deliver_stack, slot_of_tid, perf_fd_still_open, open_rings:
// perf_event_open, mmap, ioctl, fcntl, getdents64, close; timer_settime,
// clock_gettime, atomics; the perf layer's walk and parsers);
// errno is the handler's to keep (it saves it).
// Nothing there allocates, locks (a ring's try-lock only) or prints.
// Everything else runs under the control lock.
#include "sampler/perf_ring.h"

#include <dirent.h>
#include <fcntl.h>
#include <asm/perf_regs.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/errno_saver.h"
#include "base/settings.h"
#include "perf/event.h"
#include "perf/records.h"
#include "perf/ring.h"
#include "sampler/sinks.h"
#include "sampler/thread_clocks.h"
#include "unwind/memory.h"
#include "unwind/unwinder.h"

namespace profiling::sampler {
namespace internal {
char g_ring_drain_marker;
constinit std::atomic<bool> g_trigger_fd[kMaxTriggerFd];
}  // namespace internal

PerfRingEngine g_perf_ring;

// Defined by the pthread_create wrapper (runtime/thread_hooks.cc), which a
// static program does not have.
extern const bool g_thread_creation_interposed __attribute__((weak));

namespace {

constexpr size_t kPage = 4096;
constexpr unsigned kMaxRings = 1024;     // CPUs
constexpr unsigned kMaxExtra = 4096;     // (thread, CPU) events of threads that existed at start
constexpr unsigned kDefaultDataPages = 8;  // 32 KiB: 1024 records of 32 bytes
// With stacks, a record carries the top of the thread's stack, and the
// ring is larger: 512 KiB a CPU, perf record's default. The copy is at
// most 32 KiB less a record's other fields, and smaller so that a ring
// holds 32 records and 4 kernel ticks' records (stack_bytes_for): 16 KiB
// at 500 and 1000 Hz, 8 KiB at 4000 Hz.
// (16 KiB reached _start in 99.5 % of python3's, xz's and sort's samples
// and 93 % of cc1's; 32 KiB, with a 1 MiB ring, in 95 % of cc1's; 6.4 KiB
// in 22 % of sort's: bench/unwind.sh.) The kernel allocates a ring's pages
// when it is mapped, ~1.2 us a page here: the 1 MiB rings cost a short
// process 0.3 ms more (issue 12). When locked memory is short (an unprivileged user's
// kernel.perf_event_mlock_kb is shared by all of their processes), start()
// halves the ring, and with it the copy, down to kMinStackBytes before it
// gives up on the ring.
constexpr uint32_t kMaxStackBytes = 32768;
constexpr uint32_t kMinStackBytes = 2048;
constexpr unsigned kDefaultStackDataPages = 128;
constexpr unsigned kStackRecordsPerRing = 32;
// The registers the records carry are the ones the unwinder starts from.
static_assert(perf::kUnwindRegisters ==
              ((uint64_t{1} << PERF_REG_X86_BP) | (uint64_t{1} << PERF_REG_X86_SP) | (uint64_t{1} << PERF_REG_X86_IP)));

struct Ring {
  std::atomic<perf_event_mmap_page*> page{nullptr};
  size_t data_size = 0;
  // Held while a ring is read: a handler (try) or the control side (waits).
  std::atomic<bool> busy{false};
  // Samples the kernel could not write (PERF_RECORD_LOST) whose time the
  // weights of the ring's next samples would otherwise carry (under busy).
  uint64_t pending_lost = 0;
  // With stacks: where a record that wraps around the buffer's end is made
  // whole (under busy); the others are read in place. Not on the signal
  // stack: a program's alternate stack may be 8 KiB in all.
  unsigned char* scratch = nullptr;
};

// A sample as the events write it (sampling_spec): header, ip, pid/tid,
// and with PERF_SAMPLE_READ the task-clock of the thread on that CPU.
constexpr size_t kSampleBytes = 32, kSampleBytesWithoutRead = 24;

// The weight of a sample: the thread's task-clock on that CPU since its
// previous sample there, in periods, the remainder carried. A period that
// ends while the thread is in the kernel gives no sample (exclude_kernel:
// perf_swevent_hrtimer drops it), and a thread in system calls would lose
// that time; the counter still has it, and the next sample carries it, as
// perf-signal's counter read does. One entry per (slot, ring): a ring is
// drained by one reader at a time, so its entries need no atomics.
struct CpuShare {
  uint64_t last;
  int64_t remainder;
};
// PERF_RECORD_LOST with sample_id_all: header, id, lost, pid/tid.
constexpr size_t kLostBytes = 32;

constinit Ring g_rings[kMaxRings];
constinit std::atomic<unsigned> g_ring_count{0};
// Some drain found a ring (nearly) full: records were lost, perhaps with no
// PERF_RECORD_LOST to say so yet (the kernel writes it only before its next
// record in that ring, which may never come).
constinit std::atomic<bool> g_overflowed{false};
constinit bool g_running = false;
constinit size_t g_map_bytes = 0;
struct Extra {
  pid_t tid;
  int fd;
};
constinit Extra g_extra[kMaxExtra];
constinit unsigned g_extra_count = 0;
// The deferred rings' timer (a CPU-time timer of the process, while it is
// single-threaded: "Deferred rings" below).
constinit timer_t g_drain_timer{};
constinit bool g_has_drain_timer = false;
constinit uint64_t g_drain_every_ns = 0;
// Once the rings are open, each thread's own drain timer (its slot's
// timer: a CPU-time timer of the thread, SIGEV_THREAD_ID to it) fires
// every g_thread_drain_ns of its CPU time. Issue 20: the drains were a
// process CPU-time timer and, with stacks, per-CPU "trigger" events owned
// by the process (F_OWNER_PID); the kernel hands a process-directed signal
// to the main thread first when it does not block it, sleeping or not, and
// SA_RESTART restarts neither nanosleep, poll, epoll_wait nor pause: a
// sleep(1) beside a busy thread returned after 40 ms. A thread's own
// CPU-time timer expires only while that thread runs and is delivered to
// it (on return to user mode, where Linux runs CPU timers as task work),
// so it never interrupts a wait; a thread that blocks every signal still
// takes it, as the program's SIGPROF is kept apart from the kernel's mask
// (program_mask.h). It is also on time where the process timer came up to
// 250 ms of CPU late beside a busy loop (why the triggers existed).
constinit uint64_t g_thread_drain_ns = 0;
// ...and, beside it, the thread's drain trigger: a task-clock event of
// that thread alone (not inherited), every g_thread_drain_ns of its CPU
// time, that signals the thread itself (F_SETOWN_EX F_OWNER_TID, F_SETSIG
// SIGPROF). Why both: under load the kernel reported CPU-time timers late
// (rings of 32 stack records filled: "ring buffer full" beside busy
// loops), while an event's hrtimer fires on time; the timer stays for a
// thread whose event could not be opened (descriptor limit, a seccomp
// filter). Like the timer, the event counts only while its thread runs,
// and signals only that thread: it never ends a wait. Each is held by a
// mapping of its first page, not a descriptor a program could close
// (closefrom); the number its descriptor had, taken high (64 below the
// descriptor limit) and kept in internal::g_trigger_fd, is what the kernel
// puts in si_fd. The mapping is dropped to stop it (exec, the thread's end).
constinit void* g_trigger_page[internal::kMaxThreads];
constinit bool g_sample_read = false;  // records carry the counter value
// Bytes of stack each record carries (PERF_SAMPLE_STACK_USER); 0: records
// carry neither registers nor stack (no stack table was installed at start).
constinit uint32_t g_stack_bytes = 0;
constinit unsigned char* g_scratch = nullptr;
constinit size_t g_scratch_bytes = 0;
constinit uint64_t g_period_ns = 0;
// kMaxThreads x the rings, mapped at start (zero pages until used).
constinit CpuShare* g_shares = nullptr;
constinit size_t g_shares_bytes = 0;
constinit size_t g_share_stride = 0;  // entries per slot: the CPUs

// PROFIL_RING_PAGES: data pages per ring, a power of two (a knob for
// tests and measurement; the default suits up to 10 kHz). 0: not set.
unsigned data_pages_setting(unsigned fallback) {
  const char* text = ::secure_getenv("PROFIL_RING_PAGES");
  if (text == nullptr || *text == '\0') return 0;
  char* end = nullptr;
  const unsigned long pages = std::strtoul(text, &end, 10);
  if (*end != '\0' || pages == 0 || pages > 65536 || (pages & (pages - 1)) != 0) {
    std::fprintf(stderr, "profil: warning: PROFIL_RING_PAGES: '%s' is not a power of two (1..65536); using %u\n",
                 text, fallback);
    return 0;
  }
  return static_cast<unsigned>(pages);
}

// PROFIL_RING_STACK_BYTES: the stack each record carries, a multiple of 8
// from 1 KiB to 60 KiB (a record's size is 16 bits). 0: not set.
uint32_t stack_bytes_setting() {
  const char* text = ::secure_getenv("PROFIL_RING_STACK_BYTES");
  if (text == nullptr || *text == '\0') return 0;
  char* end = nullptr;
  const unsigned long bytes = std::strtoul(text, &end, 10);
  if (*end != '\0' || bytes < 1024 || bytes > 61440 || bytes % 8 != 0) {
    std::fprintf(stderr, "profil: warning: PROFIL_RING_STACK_BYTES: '%s' is not a multiple of 8 from 1024 to 61440\n",
                 text);
    return 0;
  }
  return static_cast<uint32_t>(bytes);
}

// The stack a record carries in a ring of data_size bytes at period_ns
// (above, kMaxStackBytes): room for 32 records, and for four times what
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

// The largest sample record: header, ip, pid/tid, value, abi, three
// registers, size, the stack, dyn_size.
size_t max_sample_bytes() {
  return g_stack_bytes == 0 ? kSampleBytes : kSampleBytes + 8 + 3 * 8 + 8 + g_stack_bytes + 8;
}

// The sampling events, as values: task-clock every period_ns of a thread's
// CPU time, IP and TID (and with sample_read the thread's task-clock on
// that CPU, PERF_SAMPLE_READ), with stack_bytes the registers and the top
// of the stack the unwinder needs; inherited by the threads created later
// (not a fork child, nor an exec'd image); no reader is ever woken.
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

// ASYNC-SIGNAL-SAFE. How the records of the events open now are laid out.
perf::RecordFormat record_format() {
  return perf::RecordFormat::of(sampling_spec(g_period_ns, g_sample_read, g_stack_bytes).attr());
}

// ASYNC-SIGNAL-SAFE. A sampling event of thread tid on cpu: its
// descriptor, or -errno.
long open_event(pid_t tid, int cpu, uint64_t period_ns, bool sample_read) {
  return perf::open_event(sampling_spec(period_ns, sample_read, g_stack_bytes).attr(), tid, cpu);
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

void close_extras() {
  for (unsigned i = 0; i < g_extra_count; ++i) ::close(g_extra[i].fd);
  g_extra_count = 0;
}

void free_shares() {
  if (g_shares != nullptr) ::munmap(g_shares, g_shares_bytes);
  g_shares = nullptr;
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

// ASYNC-SIGNAL-SAFE (perf_event_open, fcntl, mmap, close, getrlimit).
// Thread c's drain trigger (above), started.
void open_trigger(ThreadClock& c) {
  const size_t slot = slot_index(c);
  if (g_trigger_page[slot] != nullptr || g_thread_drain_ns == 0 || !late_system_calls_allowed()) return;
  perf_event_attr attr{};
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_TASK_CLOCK;
  attr.sample_period = g_thread_drain_ns;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  attr.remove_on_exec = 1;
  const long opened = perf::open_event(attr, c.tid, -1);
  if (opened < 0) return;
  int fd = static_cast<int>(opened);
  rlimit files{};
  int high = 1024;
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY && files.rlim_cur > 64)
    high = static_cast<int>(files.rlim_cur > 65536 ? 65536 : files.rlim_cur) - 64;
  if (const int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, high); moved >= 0) {
    ::close(fd);
    fd = moved;
  }
  void* page = MAP_FAILED;
  if (fd < internal::kMaxTriggerFd) {
    internal::g_trigger_fd[fd].store(true, std::memory_order_release);  // before it can signal
    f_owner_ex owner{F_OWNER_TID, c.tid};
    if (::fcntl(fd, F_SETOWN_EX, &owner) == 0 && ::fcntl(fd, F_SETSIG, kSamplingSignal) == 0 &&
        ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_ASYNC) == 0)
      page = ::mmap(nullptr, kPage, PROT_READ, MAP_SHARED, fd, 0);
  }
  ::close(fd);
  if (page != MAP_FAILED) g_trigger_page[slot] = page;
}

// ASYNC-SIGNAL-SAFE (munmap). Thread c's drain trigger, gone. (Its number
// stays marked: a signal already queued for it must still be recognized.)
void close_trigger(ThreadClock& c) {
  const size_t slot = slot_index(c);
  if (void* page = g_trigger_page[slot]) {
    g_trigger_page[slot] = nullptr;
    ::munmap(page, kPage);
  }
}

// ASYNC-SIGNAL-SAFE (timer_settime). Thread c's drain timer (above):
// every g_thread_drain_ns of its CPU time while the rings are open, or off.
void arm_thread_drain(ThreadClock& c, bool on) {
  if (on)
    open_trigger(c);
  else
    close_trigger(c);
  if (!c.has_timer) return;
  itimerspec spec{};
  if (on) {
    spec.it_value.tv_sec = static_cast<time_t>(g_thread_drain_ns / 1'000'000'000);
    spec.it_value.tv_nsec = static_cast<long>(g_thread_drain_ns % 1'000'000'000);
    spec.it_interval = spec.it_value;
  }
  ::timer_settime(c.timer, 0, &spec, nullptr);
}

// ASYNC-SIGNAL-SAFE. Every attached thread's drain timer (the rings just
// opened, an exec is coming or failed). The slots are read without the
// control lock from a handler: a slot being attached at the same time is
// armed by its own arm_thread.
void arm_every_thread_drain(bool on) {
  for (ThreadClock& c : internal::g_clocks)
    if (c.in_use && !c.ignored) arm_thread_drain(c, on);
}

// ASYNC-SIGNAL-SAFE. The deferred rings' process timer off.
void disarm_deferred_timer() {
  if (!g_has_drain_timer) return;
  itimerspec off{};
  ::timer_settime(g_drain_timer, 0, &off, nullptr);
}

// ASYNC-SIGNAL-SAFE. The weight of a sample whose counter reads value, from
// the thread's share of that ring (updated): periods, nearest, remainder
// carried; a value below the last starts the share again (a new thread in
// the slot).
uint32_t share_weight(CpuShare& share, uint64_t value, uint64_t period_ns) {
  if (value < share.last) share = CpuShare{0, 0};  // a new thread in the slot
  const int64_t period = static_cast<int64_t>(period_ns);
  const int64_t elapsed = static_cast<int64_t>(value - share.last) + share.remainder;
  int64_t periods = (elapsed + period / 2) / period;
  if (periods < 0) periods = 0;
  share.remainder = elapsed - periods * period;
  share.last = value;
  return static_cast<uint32_t>(periods > 1'000'000 ? 1'000'000 : periods);
}

// ASYNC-SIGNAL-SAFE. A sample after a loss weighs the time of the samples
// lost too (the counter ran on): that time is not this PC's. Takes what it
// can of *pending_lost from *weight, leaving it at least 1; returns the
// periods taken (the thread's lost periods, "ring buffer full").
uint32_t take_lost(uint64_t* pending_lost, uint32_t* weight) {
  if (*pending_lost == 0 || *weight <= 1) return 0;
  const uint32_t taken = static_cast<uint32_t>(*pending_lost < *weight - 1 ? *pending_lost : *weight - 1);
  *weight -= taken;
  *pending_lost -= taken;
  return taken;
}

// ASYNC-SIGNAL-SAFE. Where the unwinder reads when it walks a record's copy
// of a stack: the copy, and beyond it only the code of the loaded objects
// (a signal trampoline is recognised by its bytes, which have not changed
// since the sample) — never the live stack, which has moved on.
class RecordMemory final : public unwind::MemoryReader {
 public:
  RecordMemory(uint64_t base, const unsigned char* bytes, size_t size, const unwind::CodeTable* code)
      : window_(base, bytes, size, nullptr), code_(code) {}
  bool read(uint64_t address, uint64_t* value) const override {
    if (window_.read(address, value)) return true;
    if (code_ == nullptr || code_->object_of(address) == nullptr || code_->object_of(address + 7) == nullptr)
      return false;
    return live_.read(address, value);
  }

 private:
  unwind::StackWindow window_;
  const unwind::CodeTable* code_;
  unwind::LiveMemory live_;
};

// ASYNC-SIGNAL-SAFE. No more ticks for a thread than its CPU time. The
// task-clock runs on the scheduler's local clock, which in a virtual
// machine goes on while the host has taken the CPU away (steal time); the
// thread's CPU time does not count that (CONFIG_PARAVIRT_TIME_ACCOUNTING).
// Under host load the ring's weights then ran ahead of the CPU time (1.4x
// seen in one loaded pass of the suite). The CPU time read at the drain
// bounds every sample drained, which was taken before; one read per thread
// and drain (a few recent ones kept in the caller's cache).
struct CpuBound {
  int slot;
  uint64_t ticks;  // the most the slot's ticks may reach
};
uint32_t within_thread_cpu(int slot, uint32_t weight, CpuBound* cache, unsigned* cached) {
  CpuBound* bound = nullptr;
  for (unsigned i = 0; i < *cached; ++i)
    if (cache[i].slot == slot) bound = &cache[i];
  if (bound == nullptr) {
    const ThreadClock& clock = internal::g_clocks[slot];
    // A thread's CPU clock (clock_getcpuclockid(3)'s encoding for a tid).
    const auto id = static_cast<clockid_t>((~static_cast<unsigned>(clock.tid) << 3) | 6);
    timespec now{};
    if (::clock_gettime(id, &now) != 0) return weight;
    const uint64_t cpu = static_cast<uint64_t>(now.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(now.tv_nsec);
    const uint64_t ran = cpu > clock.cpu_at_attach_ns ? cpu - clock.cpu_at_attach_ns : 0;
    // Each CPU's event rounds its weights to the nearest period.
    const uint64_t slack = g_ring_count.load(std::memory_order_relaxed) + 1;
    bound = &cache[*cached < 8 ? (*cached)++ : static_cast<unsigned>(slot) % 8];
    *bound = CpuBound{slot, ran / g_period_ns + slack};
  }
  const uint64_t ticks = internal::g_clock_ticks[slot].load(std::memory_order_relaxed);
  if (ticks >= bound->ticks) return 0;
  return bound->ticks - ticks < weight ? static_cast<uint32_t>(bound->ticks - ticks) : weight;
}

// ASYNC-SIGNAL-SAFE. The kernel copies a stack from its timer interrupt,
// where it cannot fault a page in: the copy stops at the first page of the
// stack that is not resident — a page of a large local array the program
// never touched, between the sampled frame and its callers (coreutils sort:
// 80 % of the copies stopped 1-2 KiB above rsp, and the walk with them;
// perf record --call-graph dwarf loses the same stacks). Populating such a
// page for reading (MADV_POPULATE_READ, Linux 5.14) maps the shared zero
// page there, read-only, as the program's own first read would: no memory
// is used and the program's first write faults exactly as it would have;
// the next samples of that frame copy through it. madvise, not a load: a
// page past the stack's end (unmapped, a guard) is an error return, never
// a fault — the drain also runs in the final dump of a process that is
// ending on a signal, with SIGSEGV blocked.
void make_stack_copyable(uint64_t from, uint64_t to) {
#ifndef MADV_POPULATE_READ
  constexpr int MADV_POPULATE_READ = 22;
#endif
  const uint64_t first = from & ~uint64_t{kPage - 1};
  if (to > first) ::madvise(reinterpret_cast<void*>(first), to - first, MADV_POPULATE_READ);
}

// ASYNC-SIGNAL-SAFE. A sample's registers and stack copy (PERF_SAMPLE_REGS_USER,
// PERF_SAMPLE_STACK_USER), unwound into the stack table. A sample whose
// registers the kernel could not take (abi 0) or with no stack copied adds
// nothing: its flat sample stands alone, as with a failed live unwind.
void deliver_record_stack(const perf::Sample& sample, uint32_t weight) {
  unwind::StackTable* stacks = g_stack_table.load(std::memory_order_acquire);
  if (stacks == nullptr) return;
  if (sample.regs_abi == PERF_SAMPLE_REGS_ABI_NONE || sample.reg_count < 3 || sample.stack_size == 0) return;
  const uint64_t sp = sample.regs[perf::kUnwindRegisterSp];
  const RecordMemory memory(sp, sample.stack, static_cast<size_t>(sample.stack_copied),
                            g_code_table.load(std::memory_order_acquire));
  unwind::Registers start;
  start.pc = sample.regs[perf::kUnwindRegisterIp];
  start.sp = sp;
  start.fp = sample.regs[perf::kUnwindRegisterBp];
  // A walk that ran off the end of a copy the kernel cut short (not one
  // that reached the stack's end: that walk completed).
  if (deliver_unwound_stack(stacks, memory, start, weight).truncated && sample.stack_copied < sample.stack_size)
    make_stack_copyable(sp + sample.stack_copied, sp + sample.stack_size);
}

// ASYNC-SIGNAL-SAFE. One sample of ring ring_index into the sinks; returns the ticks delivered.
uint32_t deliver_sample(Ring& ring, unsigned ring_index, const perf::Sample& sample, CpuBound* bounds,
                        unsigned* bounded) {
  const int slot = slot_of_tid(static_cast<pid_t>(sample.who.tid));
  // A thread of ours (the thread finder of a static program) inherits the
  // events too: its samples are not the program's.
  if (slot >= 0 && slot_is_ignored(slot)) return 0;
  uint32_t weight =
      slot >= 0 && g_sample_read && g_shares != nullptr
          ? share_weight(g_shares[static_cast<size_t>(slot) * g_share_stride + ring_index], sample.read_value,
                         g_period_ns)
          : 1;
  // The time of the samples lost goes to the thread's lost periods (shown
  // as "ring buffer full").
  if (const uint32_t taken = take_lost(&ring.pending_lost, &weight); taken != 0 && slot >= 0)
    count_ring_lost_slot(slot, taken);
  if (slot >= 0 && g_sample_read && weight != 0) weight = within_thread_cpu(slot, weight, bounds, bounded);
  if (slot >= 0) count_ring_sample(slot, sample.ip, weight);
  if (weight == 0) return 0;
  deliver(sample.ip, weight);
  if (g_stack_bytes != 0) deliver_record_stack(sample, weight);
  return weight;
}

// ASYNC-SIGNAL-SAFE. A LOST record: with the counter in each record, the next samples carry
// the lost time (deliver_sample); without it, the lost periods are the
// thread's that the record names (the one running when it was written).
void note_lost(Ring& ring, const perf::Lost& lost) {
  if (g_sample_read && g_shares != nullptr)
    ring.pending_lost += lost.lost;
  else
    count_ring_lost(static_cast<pid_t>(lost.who.tid), lost.lost);
}

// ASYNC-SIGNAL-SAFE. Reads every record of one ring; returns the ticks delivered.
uint32_t drain_ring(Ring& ring, perf_event_mmap_page* page, unsigned ring_index) {
  perf::RingReader reader(page, kPage + ring.data_size);
  const perf::RecordFormat format = record_format();
  // A record that wraps around the end of the buffer is made whole in the
  // ring's scratch (with stacks), else here (the kernel does not reuse its
  // space until data_tail moves past it).
  alignas(8) unsigned char small[64];
  unsigned char* scratch = ring.scratch != nullptr ? ring.scratch : small;
  const size_t scratch_bytes = ring.scratch != nullptr ? g_scratch_bytes : sizeof small;
  CpuBound bounds[8];
  unsigned bounded = 0;
  uint32_t delivered = 0;
  // perf_event_open(2): data_head, then a read barrier before the data.
  const uint64_t head = reader.head();
  uint64_t tail = reader.tail();
  if (head - tail + max_sample_bytes() + kLostBytes > ring.data_size)
    g_overflowed.store(true, std::memory_order_relaxed);
  const auto visit = [&](const perf::Record& record) {
    if (record.header.type == PERF_RECORD_SAMPLE) {
      perf::Sample sample;
      if (perf::parse_sample(format, record, &sample))
        delivered += deliver_sample(ring, ring_index, sample, bounds, &bounded);
    } else if (record.header.type == PERF_RECORD_LOST) {
      perf::Lost lost;
      if (perf::parse_lost(format, record, &lost)) note_lost(ring, lost);
    }
  };
  perf::walk_records(reader.data(), reader.data_size(), head, &tail, scratch, scratch_bytes, visit);
  // Records read before the kernel may reuse their space (release).
  reader.consume_to(tail);
  return delivered;
}

}  // namespace

Engine& perf_ring_engine() { return g_perf_ring; }

bool PerfRingEngine::thread_attached(ThreadClock& c) {
  // A slot a thread had before: its shares start again.
  const size_t slot = slot_index(c);
  if (g_shares != nullptr)
    for (size_t ring = 0; ring < g_share_stride; ++ring) g_shares[slot * g_share_stride + ring] = CpuShare{0, 0};
  // Its drain timer (above), armed by arm_thread once the rings are open.
  // Best effort: a thread without one is still sampled by the inherited
  // events, and drained by the others, by a sigwait, at its end.
  if (late_system_calls_allowed()) {
    sigevent event{};
    event.sigev_notify = SIGEV_THREAD_ID;
    event.sigev_signo = kSamplingSignal;
    event.sigev_value.sival_ptr = &internal::g_ring_drain_marker;
    event._sigev_un._tid = c.tid;
    timer_t timer;
    if (::timer_create(thread_cpu_clock(c.tid), &event, &timer) == 0) {
      c.timer = timer;
      c.has_timer = true;
    }
  }
  return true;
}

void PerfRingEngine::thread_released(ThreadClock& c) {
  close_trigger(c);
  if (c.has_timer) ::timer_delete(c.timer);
  c.has_timer = false;
}

void PerfRingEngine::forget_in_child(ThreadClock& c) {
  // The parent's triggers: the child's copies of their mappings (a
  // private mapping of a perf event is not copied: VM_DONTCOPY) are gone.
  g_trigger_page[slot_index(c)] = nullptr;
}

namespace {

void free_scratch() {
  if (g_scratch != nullptr) ::munmap(g_scratch, g_scratch_bytes * kMaxRings);
  g_scratch = nullptr;
  for (Ring& ring : g_rings) ring.scratch = nullptr;
}

// Deferred rings (issue 12: events created lazily). A ring's pages are
// allocated and mapped by the kernel when it is mapped (~1.2 us a page
// here: 2 x 129 pages with stacks cost a short process ~0.3 ms of wall),
// and most processes of a build or a shell script end before their first
// sampling period. A process that is single-threaded when sampling starts
// therefore opens its events and maps its rings only when one of these
// comes first:
//   - one period of its CPU time: the drain timer is armed for it; its
//     signal samples the thread it interrupts (weighted by that thread's
//     CPU time, as a CPU-time timer's sample is), then opens the rings;
//   - the program creates a thread (the pthread_create wrapper): inherited
//     events must exist before the thread does;
//   - the program blocks the sampling signal (the sigprocmask and
//     pthread_sigmask wrappers): the timer's signal would wait, the ring
//     does not.
// Opening is async-signal-safe (system calls and this file's arrays). A
// static program (no pthread_create wrapper) opens at start, as does a
// process that already has threads.
enum : int { kRingsOpen = 0, kDeferred = 1, kOpening = 2, kRefused = 3 };
constinit std::atomic<int> g_ring_state{kRingsOpen};
constinit int g_cpus[kMaxRings];
constinit unsigned g_ncpu = 0;
constinit unsigned g_data_pages = 0;    // chosen at start (halved if refused)
constinit bool g_may_halve = false;     // the size is ours to choose
constinit uint32_t g_stack_setting = 0; // PROFIL_RING_STACK_BYTES

// Why opening failed, kept as numbers (a handler cannot build the text).
enum class OpenStep { none, open_event, mmap, set_output, no_cpu };
struct OpenFailure {
  OpenStep step = OpenStep::none;
  int error = 0;
  size_t bytes = 0;
};
constinit OpenFailure g_deferred_failure{};

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

// ASYNC-SIGNAL-SAFE (open, getdents64, close). The main thread first, then
// the other threads of the process, up to max.
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

// ASYNC-SIGNAL-SAFE. Every CPU's event and ring, with data_pages pages per
// ring; the drain interval; the triggers. The drain timer, the shares and
// the scratch space exist already (prepare_process).
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
  // The drain timer: after every stretch of the process's CPU time in
  // which no ring can fill, even if one CPU took all of it (each ring gets
  // at most one record per period of that CPU's time), half the ring's
  // records of it.
  const uint64_t records = data_size / (g_stack_bytes != 0 ? max_sample_bytes()
                                        : g_sample_read  ? kSampleBytes
                                                         : kSampleBytesWithoutRead);
  uint64_t every = period_ns * (records / 2);
  if (every < 10'000'000) every = 10'000'000;
  g_drain_every_ns = every;
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

// The stack a record carries with rings of pages pages.
uint32_t stack_bytes_with(unsigned pages, uint64_t period_ns) {
  if (g_stack_setting != 0) return g_stack_setting;
  const uint32_t bytes = stack_bytes_for(static_cast<size_t>(pages) * kPage, period_ns);
  return bytes < kMinStackBytes ? kMinStackBytes : bytes;
}

// ASYNC-SIGNAL-SAFE. open_rings at the size chosen at start; where locked
// memory is short, a smaller ring (and stack copy) drains as often, which
// is still better than a signal per sample: halved down to kMinStackBytes.
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

// What every way of opening needs first, in normal context: the CPUs, the
// per-thread shares, the scratch space, the drain timer.
int prepare_process(uint64_t period_ns, std::string* why) {
  g_period_ns = period_ns;
  g_ncpu = perf::online_cpus(g_cpus, kMaxRings);
  if (g_ncpu == 0) {
    // No /sys to read: the CPUs online now, by count.
    const long conf = ::sysconf(_SC_NPROCESSORS_ONLN);
    for (long c = 0; c < conf && g_ncpu < kMaxRings; ++c) g_cpus[g_ncpu++] = static_cast<int>(c);
  }
  if (g_ncpu > 0) {
    g_share_stride = g_ncpu;
    g_shares_bytes = sizeof(CpuShare) * internal::kMaxThreads * g_ncpu;
    void* shares = ::mmap(nullptr, g_shares_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    g_shares = shares == MAP_FAILED ? nullptr : static_cast<CpuShare*>(shares);
  }
  if (g_stack_bytes != 0) {
    // One record's room per ring (zero pages until a record wraps), for
    // the largest copy: halving only shrinks it.
    g_scratch_bytes = (max_sample_bytes() + 4095) & ~size_t{4095};
    void* scratch = ::mmap(nullptr, g_scratch_bytes * kMaxRings, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    g_scratch = scratch == MAP_FAILED ? nullptr : static_cast<unsigned char*>(scratch);
  }
  sigevent event{};
  event.sigev_notify = SIGEV_SIGNAL;
  event.sigev_signo = kSamplingSignal;
  event.sigev_value.sival_ptr = &internal::g_ring_drain_marker;
  if (::timer_create(CLOCK_PROCESS_CPUTIME_ID, &event, &g_drain_timer) != 0) {
    const int error = errno;
    *why = std::string("perf ring buffer: timer_create(CLOCK_PROCESS_CPUTIME_ID): ") + std::strerror(error);
    free_shares();
    free_scratch();
    return error;
  }
  g_has_drain_timer = true;
  return 0;
}

void release_process() {
  if (g_has_drain_timer) ::timer_delete(g_drain_timer);
  g_has_drain_timer = false;
  free_shares();
  free_scratch();
}

// ASYNC-SIGNAL-SAFE. While the rings are deferred, the drain timer fires
// after one more period of the process's CPU time.
void arm_deferred_timer() {
  if (!g_has_drain_timer) return;
  itimerspec spec{};
  spec.it_value.tv_sec = static_cast<time_t>(g_period_ns / 1'000'000'000);
  spec.it_value.tv_nsec = static_cast<long>(g_period_ns % 1'000'000'000);
  ::timer_settime(g_drain_timer, 0, &spec, nullptr);
}

// ASYNC-SIGNAL-SAFE. The deferred timer's sample: the thread it
// interrupted, weighted by its CPU time not yet in ticks (nearest period,
// as the rings' weights round), at its PC and, with a stack table, its
// live stack. The rings' events count from the moment they open.
uint32_t deliver_deferred_sample(const void* context) {
  const int slot = slot_of_tid(current_tid());
  if (slot < 0 || slot_is_ignored(slot) || context == nullptr) return 0;
  timespec now{};
  if (::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now) != 0) return 0;
  const uint64_t cpu = static_cast<uint64_t>(now.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(now.tv_nsec);
  const ThreadClock& clock = internal::g_clocks[slot];
  const uint64_t ran = cpu > clock.cpu_at_attach_ns ? cpu - clock.cpu_at_attach_ns : 0;
  const uint64_t due = (ran + g_period_ns / 2) / g_period_ns;
  const uint64_t have = internal::g_clock_ticks[slot].load(std::memory_order_relaxed);
  if (due <= have) return 0;
  const uint32_t weight = static_cast<uint32_t>(due - have > 1'000'000 ? 1'000'000 : due - have);
  const auto* uc = static_cast<const ucontext_t*>(context);
  const uint64_t pc = static_cast<uint64_t>(uc->uc_mcontext.gregs[REG_RIP]);
  count_ring_sample(slot, pc, weight);
  g_handlers_in_flight.fetch_add(1, std::memory_order_seq_cst);
  deliver(pc, weight);
  if (unwind::StackTable* stacks = g_stack_table.load(std::memory_order_acquire)) deliver_stack(stacks, context, weight);
  g_handlers_in_flight.fetch_sub(1, std::memory_order_release);
  return weight;
}

// ASYNC-SIGNAL-SAFE. Deferred -> open (or refused: the failure is kept for
// the fallback, thread_clocks.cc; meanwhile the timer keeps sampling). The
// caller has the sampling signal blocked.
void open_deferred_rings() {
  int expected = kDeferred;
  if (!g_ring_state.compare_exchange_strong(expected, kOpening, std::memory_order_acq_rel)) return;
  OpenFailure failure{};
  if (open_rings_as_large_as_allowed(g_period_ns, &failure) == 0) {
    g_overflowed.store(false, std::memory_order_relaxed);
    g_ring_state.store(kRingsOpen, std::memory_order_release);
    disarm_deferred_timer();
    arm_every_thread_drain(true);
  } else {
    g_deferred_failure = failure;
    g_ring_state.store(kRefused, std::memory_order_release);
    arm_deferred_timer();
  }
}

// PROFIL_RING_DEFER=0 opens the rings at start (for measuring, and tests
// of what a ring opened at start does).
bool may_defer() {
  if (&g_thread_creation_interposed == nullptr) return false;  // a static program: no wrapper tells us
  return base::flag_from_environment("PROFIL_RING_DEFER", ::secure_getenv("PROFIL_RING_DEFER"), true);
}

}  // namespace

int PerfRingEngine::start(uint64_t period_ns, std::string* why) {
  if (g_running) return 0;
  // Stacks are taken by the kernel with each sample when a stack table is
  // installed now (the preload installs it before the first sample sink,
  // so sampling starts once, with them).
  const bool stacks = g_stack_table.load(std::memory_order_acquire) != nullptr;
  g_stack_setting = stacks ? stack_bytes_setting() : 0;
  const unsigned preferred = stacks ? kDefaultStackDataPages : kDefaultDataPages;
  const unsigned chosen = data_pages_setting(preferred);
  g_data_pages = chosen != 0 ? chosen : preferred;
  g_may_halve = stacks && chosen == 0 && g_stack_setting == 0;
  g_stack_bytes = stacks ? stack_bytes_with(g_data_pages, period_ns) : 0;
  if (const int error = prepare_process(period_ns, why); error != 0) return error;
  pid_t tids[2];
  if (list_threads(tids, 2) == 1 && may_defer()) {
    // One event opened and closed now, so that a process where perf is
    // forbidden (perf_event_paranoid, a seccomp filter, an old kernel)
    // falls back at start, with its reason, as without deferring; only
    // locked memory is left to refuse the opening later.
    long probe = open_event(tids[0], g_ncpu > 0 ? g_cpus[0] : 0, period_ns, true);
    if (probe == -EINVAL) probe = open_event(tids[0], g_ncpu > 0 ? g_cpus[0] : 0, period_ns, false);
    if (probe < 0) {
      const int error = static_cast<int>(-probe);
      *why = describe_failure(OpenFailure{OpenStep::open_event, error, 0});
      release_process();
      return error;
    }
    ::close(static_cast<int>(probe));
    g_ring_state.store(kDeferred, std::memory_order_release);
    g_running = true;
    g_overflowed.store(false, std::memory_order_relaxed);
    arm_deferred_timer();
    return 0;
  }
  OpenFailure failure{};
  if (const int error = open_rings_as_large_as_allowed(period_ns, &failure); error != 0) {
    *why = describe_failure(failure);
    release_process();
    return error;
  }
  g_ring_state.store(kRingsOpen, std::memory_order_release);
  g_running = true;
  g_overflowed.store(false, std::memory_order_relaxed);
  // No thread is attached yet: arm_thread arms each one's drain.
  return 0;
}

bool PerfRingEngine::takes_stacks() const { return g_running && g_stack_bytes != 0; }

void PerfRingEngine::stop() {
  if (!g_running) return;
  if (g_has_drain_timer) ::timer_delete(g_drain_timer);
  g_has_drain_timer = false;
  drain(true);
  close_extras();
  unmap_rings(true);
  release_process();
  g_ring_state.store(kRingsOpen, std::memory_order_release);
  g_running = false;
}

void PerfRingEngine::thread_detaching(ThreadClock&) {
  // What the thread ran is in the rings until read: read it before its
  // accounting is closed.
  drain(true);
}

int PerfRingEngine::fork_child(uint64_t period_ns, std::string* why) {
  // The rings are not mapped in the child (the kernel marks them
  // VM_DONTCOPY), the timer is not inherited, and the events sample the
  // parent's threads only: forget them, close our copies of the extra
  // descriptors (the parent's stay open), start afresh.
  if (!g_running) return 0;
  g_has_drain_timer = false;
  close_extras();
  unmap_rings(false);
  free_shares();  // the child's copy (private memory)
  free_scratch();
  g_ring_state.store(kRingsOpen, std::memory_order_relaxed);
  g_running = false;
  if (!late_system_calls_allowed()) {
    // The program's seccomp filter, inherited: no event may be opened now.
    *why = "perf ring buffer: the program installed a seccomp filter";
    return EPERM;
  }
  return start(period_ns, why);
}

void PerfRingEngine::arm_thread(ThreadClock& c, bool on) {
  arm_thread_drain(c, on && g_running && g_ring_state.load(std::memory_order_acquire) == kRingsOpen);
}

void PerfRingEngine::suspend_for_exec() {
  if (!g_running) return;
  // The records so far belong to the old image's profile; the events are
  // removed from the thread by the exec itself (remove_on_exec), the rings
  // and timers go with the old address space.
  disarm_deferred_timer();
  arm_every_thread_drain(false);
  drain(true);
}

void PerfRingEngine::resume_after_exec() {
  if (!g_running) return;
  if (g_ring_state.load(std::memory_order_acquire) == kRingsOpen)
    arm_every_thread_drain(true);
  else
    arm_deferred_timer();
}

uint32_t PerfRingEngine::on_drain_timer(const void* context) {
  switch (g_ring_state.load(std::memory_order_acquire)) {
    case kDeferred: {
      const uint32_t delivered = deliver_deferred_sample(context);
      open_deferred_rings();
      return delivered;
    }
    case kRefused: {
      const uint32_t delivered = deliver_deferred_sample(context);
      arm_deferred_timer();
      return delivered;
    }
    case kOpening: return 0;  // another thread opens them (a raw clone's)
    default: break;
  }
  // Each thread's drain timer is periodic: nothing to re-arm.
  return drain(false);
}

void PerfRingEngine::open_if_deferred() {
  if (g_ring_state.load(std::memory_order_acquire) != kDeferred) return;
  // The program's errno stays what its sigprocmask or pthread_create left.
  base::ErrnoSaver errno_saver;
  // The timer's handler must not interrupt the opening in this thread:
  // the raw system call, not sigprocmask (libprofil's own wrapper).
  sigset_t sampling, previous;
  sigemptyset(&sampling);
  sigaddset(&sampling, kSamplingSignal);
  ::syscall(SYS_rt_sigprocmask, SIG_BLOCK, &sampling, &previous, sizeof(uint64_t));
  open_deferred_rings();
  ::syscall(SYS_rt_sigprocmask, SIG_SETMASK, &previous, nullptr, sizeof(uint64_t));
}

bool PerfRingEngine::deferred() const {
  const int state = g_ring_state.load(std::memory_order_acquire);
  return g_running && (state == kDeferred || state == kOpening);
}

bool PerfRingEngine::refused(std::string* why) const {
  if (!g_running || g_ring_state.load(std::memory_order_acquire) != kRefused) return false;
  if (why != nullptr) *why = describe_failure(g_deferred_failure);
  return true;
}

uint32_t PerfRingEngine::drain(bool wait) {
  uint32_t delivered = 0;
  const unsigned count = g_ring_count.load(std::memory_order_acquire);
  for (unsigned i = 0; i < count; ++i) {
    Ring& ring = g_rings[i];
    bool expected = false;
    // A handler tries once and moves on (the holder reads the ring anyway);
    // the control side waits for a handler in another thread to finish.
    // (A handler interrupting this thread while it holds a ring fails its
    // try and returns, so the wait never waits for itself.)
    while (!ring.busy.compare_exchange_weak(expected, true, std::memory_order_acquire)) {
      if (!wait && expected) break;
      expected = false;
      if (wait) sched_yield();
    }
    if (!wait && expected) continue;
    if (perf_event_mmap_page* page = ring.page.load(std::memory_order_acquire)) {
      g_handlers_in_flight.fetch_add(1, std::memory_order_seq_cst);
      delivered += drain_ring(ring, page, i);
      g_handlers_in_flight.fetch_sub(1, std::memory_order_release);
    }
    ring.busy.store(false, std::memory_order_release);
  }
  return delivered;
}

bool PerfRingEngine::running() const { return g_running; }

bool PerfRingEngine::overflowed() const { return g_overflowed.load(std::memory_order_relaxed); }

unsigned PerfRingEngine::rings() const { return g_ring_count.load(std::memory_order_relaxed); }

int PerfRingEngine::descriptor_of(pid_t tid) const {
  for (unsigned i = 0; i < g_extra_count; ++i)
    if (g_extra[i].tid == tid) return g_extra[i].fd;
  return -1;
}

unsigned PerfRingEngine::noise_periods() const {
  if (g_ring_state.load(std::memory_order_acquire) != kRingsOpen) {
    // The deferred rings' timer is checked at the kernel's tick (4 ms with
    // Debian's CONFIG_HZ=250): a short process may end a tick after its
    // first period with no sample yet, which is the timer's granularity,
    // not a loss to name.
    constexpr uint64_t kKernelTickNs = 4'000'000;
    return 1 + static_cast<unsigned>((kKernelTickNs + g_period_ns - 1) / g_period_ns);
  }
  return rings() > 1 ? rings() : 1;
}

UnsampledCause PerfRingEngine::gap_cause(const ThreadClock& c, bool) const {
  // Before the rings open, a CPU-time timer samples: it reports at the
  // kernel's tick, like the cpu clock's.
  if (g_ring_state.load(std::memory_order_acquire) != kRingsOpen) return UnsampledCause::between_ticks;
  // A signal mask does not stop the ring: what it misses is a descriptor
  // closed (a thread that existed at start), records lost to a full ring
  // that no PERF_RECORD_LOST reported yet, or else the time after the
  // thread's last sample on each CPU, which every period ending there has
  // not carried: beyond the noise (a period per CPU), periods that all
  // ended in the kernel (sampler.h, in_kernel).
  const int fd = descriptor_of(c.tid);
  if (fd >= 0 && !perf_fd_still_open(fd)) return UnsampledCause::descriptor_closed;
  if (overflowed()) return UnsampledCause::ring_full;
  return UnsampledCause::in_kernel;
}

void PerfRingEngine::account_process(Unsampled* out, uint64_t period_ns) {
  // The rings' samples not read yet are sampled time: read them first (the
  // dump calls this before it writes the table).
  drain(false);
  const uint64_t unattributed = internal::g_unattributed_lost.load(std::memory_order_relaxed);
  if (unattributed != 0)
    out->rows[static_cast<size_t>(UnsampledCause::ring_full) - 1].cpu_ns += unattributed * period_ns;
}

}  // namespace profiling::sampler
