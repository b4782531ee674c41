// The perf clock through the kernel's ring buffer (perf_ring.h): the
// engine's start, stop, fork and exec, and what it reports (the gap
// causes, the process's unsampled time). Its other jobs are beside it
// (internal/perf_ring_state.h lists them): the events and rings opened,
// the drain, the drains per thread, the deferred rings.
//
// ASYNC-SIGNAL-SAFE: descriptor_of, gap_cause, account_process, running,
// rings, noise_periods, wants_drains_from_waiting_threads (and the drain
// they call: perf_ring_drain.cc).
// Nothing there allocates, locks (a ring's try-lock only) or prints; errno
// is the handler's to keep (it saves it). Everything else runs under the
// control lock.
#include "sampler/perf_ring.h"

#include <signal.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "perf/event.h"
#include "sampler/internal/perf_ring_state.h"
#include "sampler/sinks.h"
#include "sampler/running_engine.h"
#include "sampler/thread_slots.h"

namespace profiling::sampler {

PerfRingEngine g_perf_ring;

namespace ring {

constinit bool g_running = false;
constinit uint64_t g_period_ns = 0;
constinit int g_cpus[kMaxRings];
constinit unsigned g_ncpu = 0;
constinit unsigned g_data_pages = 0;
constinit bool g_may_halve = false;
constinit uint32_t g_stack_setting = 0;
constinit CpuShare* g_shares = nullptr;
constinit size_t g_shares_bytes = 0;
constinit size_t g_share_stride = 0;
constinit unsigned char* g_scratch = nullptr;
constinit size_t g_scratch_bytes = 0;
constinit timer_t g_drain_timer{};
constinit bool g_has_drain_timer = false;

namespace {

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

void free_shares() {
  if (g_shares != nullptr) ::munmap(g_shares, g_shares_bytes);
  g_shares = nullptr;
}

void free_scratch() {
  if (g_scratch != nullptr) ::munmap(g_scratch, g_scratch_bytes * kMaxRings);
  g_scratch = nullptr;
  for (Ring& ring : g_rings) ring.scratch = nullptr;
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
  event.sigev_value.sival_ptr = &internal::g_drain_marker;
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

}  // namespace
}  // namespace ring

Engine& perf_ring_engine() { return g_perf_ring; }

int PerfRingEngine::start(uint64_t period_ns, std::string* why) {
  using namespace ring;
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
    // locked memory is left to refuse the opening later
    // (perf_ring_deferral.cc).
    if (const int error = probe_event(tids[0], period_ns, why); error != 0) {
      release_process();
      return error;
    }
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

bool PerfRingEngine::takes_stacks() const { return ring::g_running && ring::g_stack_bytes != 0; }

void PerfRingEngine::stop() {
  using namespace ring;
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

int PerfRingEngine::fork_child(uint64_t period_ns, std::string* why) {
  using namespace ring;
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

void PerfRingEngine::suspend_for_exec() {
  if (!ring::g_running) return;
  // The records so far belong to the old image's profile; the events are
  // removed from the thread by the exec itself (remove_on_exec), the rings
  // and timers go with the old address space.
  ring::disarm_deferred_timer();
  ring::arm_every_thread_drain(false);
  drain(true);
}

void PerfRingEngine::resume_after_exec() {
  if (!ring::g_running) return;
  if (ring::g_ring_state.load(std::memory_order_acquire) == ring::kRingsOpen)
    ring::arm_every_thread_drain(true);
  else
    ring::arm_deferred_timer();
}

bool PerfRingEngine::running() const { return ring::g_running; }

unsigned PerfRingEngine::rings() const { return ring::g_ring_count.load(std::memory_order_relaxed); }

bool PerfRingEngine::wants_drains_from_waiting_threads() const { return running() && rings() > 0; }

int PerfRingEngine::descriptor_of(pid_t tid) const {
  for (unsigned i = 0; i < ring::g_extra_count; ++i)
    if (ring::g_extra[i].tid == tid) return ring::g_extra[i].fd;
  return -1;
}

unsigned PerfRingEngine::noise_periods() const {
  if (ring::g_ring_state.load(std::memory_order_acquire) != ring::kRingsOpen) {
    // The deferred rings' timer is checked at the kernel's tick (4 ms with
    // Debian's CONFIG_HZ=250): a short process may end a tick after its
    // first period with no sample yet, which is the timer's granularity,
    // not a loss to name.
    constexpr uint64_t kKernelTickNs = 4'000'000;
    return 1 + static_cast<unsigned>((kKernelTickNs + ring::g_period_ns - 1) / ring::g_period_ns);
  }
  return rings() > 1 ? rings() : 1;
}

UnsampledCause PerfRingEngine::gap_cause(const ThreadClock& c, bool) const {
  // Before the rings open, a CPU-time timer samples: it reports at the
  // kernel's tick, like the cpu clock's.
  if (ring::g_ring_state.load(std::memory_order_acquire) != ring::kRingsOpen) return UnsampledCause::between_ticks;
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
