// The ring engine's drains per thread (perf_ring.h): each thread's drain
// timer and drain trigger, from the thread's attach to its release.
//
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
//
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
// descriptor limit) and marked a drain signal's (internal::g_drain_fd,
// running_engine.h), is what the kernel puts in si_fd. The mapping is dropped to stop it (exec, the thread's end).
//
// ASYNC-SIGNAL-SAFE: arm_every_thread_drain and what it calls
// (perf_event_open, fcntl, mmap, munmap, close, getrlimit, timer_settime;
// the handler saves errno). The engine's thread methods run under the
// control lock.
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <atomic>

#include "perf/event.h"
#include "sampler/internal/perf_ring_state.h"
#include "sampler/perf_ring.h"
#include "sampler/sampler.h"
#include "sampler/running_engine.h"
#include "sampler/thread_slots.h"

namespace profiling::sampler {
namespace ring {
namespace {

// Each thread's drain trigger, by slot: the mapping that holds it.
constinit void* g_trigger_page[internal::kMaxThreads];

// Thread c's drain trigger (above), started.
void open_trigger(ThreadClock& c) {
  const size_t slot = slot_index(c);
  if (g_trigger_page[slot] != nullptr || g_thread_drain_ns == 0 || !late_system_calls_allowed()) return;
  // Counting only: it signals, and writes no record.
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
  if (fd < internal::kMaxDrainFd) {
    internal::g_drain_fd[fd].store(true, std::memory_order_release);  // before it can signal
    f_owner_ex owner{F_OWNER_TID, c.tid};
    if (::fcntl(fd, F_SETOWN_EX, &owner) == 0 && ::fcntl(fd, F_SETSIG, kSamplingSignal) == 0 &&
        ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_ASYNC) == 0)
      page = ::mmap(nullptr, kPage, PROT_READ, MAP_SHARED, fd, 0);
  }
  ::close(fd);
  if (page != MAP_FAILED) g_trigger_page[slot] = page;
}

// Thread c's drain trigger, gone. (Its number stays marked: a signal
// already queued for it must still be recognized.)
void close_trigger(ThreadClock& c) {
  const size_t slot = slot_index(c);
  if (void* page = g_trigger_page[slot]) {
    g_trigger_page[slot] = nullptr;
    ::munmap(page, kPage);
  }
}

// Thread c's drain timer and trigger: every g_thread_drain_ns of its CPU
// time while the rings are open, or off.
void arm_thread_drain(ThreadClock& c, bool on) {
  if (on)
    open_trigger(c);
  else
    close_trigger(c);
  if (!c.has_timer) return;
  const itimerspec spec = on ? timer_setting(g_thread_drain_ns, g_thread_drain_ns) : timer_setting(0, 0);
  ::timer_settime(c.timer, 0, &spec, nullptr);
}

}  // namespace

// The slots are read without the control lock from a handler (the rings
// just opened, an exec is coming or failed): a slot being attached at the
// same time is armed by its own arm_thread.
void arm_every_thread_drain(bool on) {
  for (ThreadClock& c : internal::g_clocks)
    if (c.in_use && !c.ignored) arm_thread_drain(c, on);
}

}  // namespace ring

bool PerfRingEngine::thread_attached(ThreadClock& c) {
  // A slot a thread had before: its shares start again.
  const size_t slot = slot_index(c);
  if (ring::g_shares != nullptr)
    for (size_t r = 0; r < ring::g_share_stride; ++r)
      ring::g_shares[slot * ring::g_share_stride + r] = ring::CpuShare{0, 0};
  // Its drain timer (above), armed by arm_thread once the rings are open.
  // Best effort: a thread without one is still sampled by the inherited
  // events, and drained by the others, by a sigwait, at its end.
  if (late_system_calls_allowed()) {
    sigevent event{};
    event.sigev_notify = SIGEV_THREAD_ID;
    event.sigev_signo = kSamplingSignal;
    event.sigev_value.sival_ptr = &internal::g_drain_marker;
    event._sigev_un._tid = c.tid;
    timer_t timer;
    if (::timer_create(thread_cpu_clock(c.tid), &event, &timer) == 0) {
      c.timer = timer;
      c.has_timer = true;
    }
  }
  return true;
}

void PerfRingEngine::arm_thread(ThreadClock& c, bool on) {
  const bool rings_open = ring::g_ring_state.load(std::memory_order_acquire) == ring::kRingsOpen;
  // Deferred (or refused) rings: the thread's timer samples every period
  // until the first signal opens them (perf_ring_deferral.cc).
  if (on && ring::g_running && !rings_open) {
    ring::arm_deferred_thread_timer(c);
    return;
  }
  ring::arm_thread_drain(c, on && ring::g_running && rings_open);
}

void PerfRingEngine::thread_detaching(ThreadClock&) {
  // What the thread ran is in the rings until read: read it before its
  // accounting is closed.
  drain(true);
}

void PerfRingEngine::thread_released(ThreadClock& c) {
  ring::close_trigger(c);
  if (c.has_timer) ::timer_delete(c.timer);
  c.has_timer = false;
}

void PerfRingEngine::forget_in_child(ThreadClock& c) {
  // The parent's triggers: the child's copies of their mappings (a
  // private mapping of a perf event is not copied: VM_DONTCOPY) are gone.
  ring::g_trigger_page[slot_index(c)] = nullptr;
}

}  // namespace profiling::sampler
