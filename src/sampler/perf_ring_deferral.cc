// The ring engine's deferred rings (perf_ring.h; issue 12: events created
// lazily). A ring's pages are allocated and mapped by the kernel when it is
// mapped (~1.2 us a page here: 2 x 129 pages with stacks cost a short
// process ~0.3 ms of wall), and most processes of a build or a shell script
// end before their first sampling period. A process that is
// single-threaded when sampling starts therefore opens its events and maps
// its rings only when one of these comes first:
//   - one period of its CPU time: two CPU-time timers are armed for it,
//     the process's (the drain timer) and the thread's own (its slot's,
//     SIGEV_THREAD_ID, every period); the first signal samples the thread
//     it interrupts (weighted by that thread's CPU time, as a CPU-time
//     timer's sample is), then opens the rings. Two, because this kernel
//     (6.18, in a loaded suite run: 3 in ~900 runs of a test beside it)
//     now and then leaves an expired process timer unfired: timer_gettime
//     said 1 ns left after 0.3 s of CPU, and the run had no sample. The
//     thread's timer is checked on the thread's own expiry cache; the
//     process's still counts a thread made with a raw clone;
//   - the program creates a thread (the pthread_create wrapper): inherited
//     events must exist before the thread does;
//   - the program is about to install a seccomp filter
//     (before_seccomp_filter).
// An atomic state (deferred, opening, open, refused) makes the opening
// happen once. Opening is async-signal-safe (system calls and the engine's
// arrays). A static program (no pthread_create wrapper) opens at start, as
// does a process that already has threads.
//
// ASYNC-SIGNAL-SAFE: everything here but may_defer, deferred and
// refused(why) (timer_settime, clock_gettime, rt_sigprocmask, the opening's
// system calls; the handler saves errno, open_if_deferred keeps the
// program's).
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>

#include "base/errno_saver.h"
#include "base/settings.h"
#include "sampler/internal/perf_ring_state.h"
#include "sampler/perf_ring.h"
#include "sampler/sinks.h"
#include "sampler/thread_slots.h"

namespace profiling::sampler {

// Defined by the pthread_create wrapper (runtime/thread_hooks.cc), which a
// static program does not have.
extern const bool g_thread_creation_interposed __attribute__((weak));

namespace ring {

constinit std::atomic<int> g_ring_state{kRingsOpen};
constinit OpenFailure g_deferred_failure{};

// PROFIL_RING_PROCESS_TIMER=0 leaves the process's timer unarmed (tests:
// the thread's own timer alone must open the rings, as when the kernel
// did not fire the process's). Read at start, in may_defer.
constinit bool g_process_timer_on = true;

// While the rings are deferred, the drain timer fires after one more
// period of the process's CPU time.
void arm_deferred_timer() {
  if (!g_has_drain_timer || !g_process_timer_on) return;
  const itimerspec spec = timer_setting(g_period_ns, 0);
  ::timer_settime(g_drain_timer, 0, &spec, nullptr);
}

void disarm_deferred_timer() {
  if (!g_has_drain_timer) return;
  itimerspec off{};
  ::timer_settime(g_drain_timer, 0, &off, nullptr);
}

// PROFIL_RING_DEFER=0 opens the rings at start (for measuring, and tests
// of what a ring opened at start does).
bool may_defer() {
  if (&g_thread_creation_interposed == nullptr) return false;  // a static program: no wrapper tells us
  g_process_timer_on =
      base::flag_from_environment("PROFIL_RING_PROCESS_TIMER", ::secure_getenv("PROFIL_RING_PROCESS_TIMER"), true);
  return base::flag_from_environment("PROFIL_RING_DEFER", ::secure_getenv("PROFIL_RING_DEFER"), true);
}

void arm_deferred_thread_timer(ThreadClock& c) {
  if (!c.has_timer) return;
  const itimerspec spec = timer_setting(g_period_ns, g_period_ns);
  ::timer_settime(c.timer, 0, &spec, nullptr);
}

namespace {

// The deferred timer's sample: the thread it interrupted, weighted by its
// CPU time not yet in ticks (nearest period, as the rings' weights round),
// at its PC and, with a stack table, its live stack. The rings' events
// count from the moment they open.
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

// Deferred -> open (or refused: the failure is kept for the fallback,
// thread_clocks.h, fall_back_from_refused_start; meanwhile the timer keeps
// sampling). The caller has the sampling signal blocked.
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

}  // namespace
}  // namespace ring

uint32_t PerfRingEngine::on_drain_signal(const void* context) {
  switch (ring::g_ring_state.load(std::memory_order_acquire)) {
    case ring::kDeferred: {
      const uint32_t delivered = ring::deliver_deferred_sample(context);
      ring::open_deferred_rings();
      return delivered;
    }
    case ring::kRefused: {
      const uint32_t delivered = ring::deliver_deferred_sample(context);
      ring::arm_deferred_timer();
      return delivered;
    }
    case ring::kOpening: return 0;  // another thread opens them (a raw clone's)
    default: break;
  }
  // Each thread's drain timer is periodic: nothing to re-arm.
  return drain(false);
}

void PerfRingEngine::open_if_deferred() {
  if (ring::g_ring_state.load(std::memory_order_acquire) != ring::kDeferred) return;
  // The program's errno stays what its sigprocmask or pthread_create left.
  base::ErrnoSaver errno_saver;
  // The timer's handler must not interrupt the opening in this thread:
  // the raw system call, not sigprocmask (libprofil's own wrapper).
  sigset_t sampling, previous;
  sigemptyset(&sampling);
  sigaddset(&sampling, kSamplingSignal);
  ::syscall(SYS_rt_sigprocmask, SIG_BLOCK, &sampling, &previous, sizeof(uint64_t));
  ring::open_deferred_rings();
  ::syscall(SYS_rt_sigprocmask, SIG_SETMASK, &previous, nullptr, sizeof(uint64_t));
}

bool PerfRingEngine::deferred() const {
  const int state = ring::g_ring_state.load(std::memory_order_acquire);
  return ring::g_running && (state == ring::kDeferred || state == ring::kOpening);
}

bool PerfRingEngine::refused(std::string* why) const {
  if (!ring::g_running || ring::g_ring_state.load(std::memory_order_acquire) != ring::kRefused) return false;
  if (why != nullptr) *why = ring::describe_failure(ring::g_deferred_failure);
  return true;
}

}  // namespace profiling::sampler
