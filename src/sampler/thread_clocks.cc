// The dispatcher (thread_clocks.h): sampling started, stopped and switched
// for the whole process through the running engine (running_engine.h),
// whichever it is.
//
// ASYNC-SIGNAL-SAFE: drain_engine, deliver_pending_samples,
// descriptor_in_range, live_descriptor_in_range and what they call (the
// engine's drain and descriptor_in_range). Everything else runs under the
// sampler's control lock.
#include "sampler/thread_clocks.h"

#include "sampler/engine.h"
#include "sampler/handler.h"
#include "sampler/running_engine.h"
#include "sampler/task_sync.h"
#include "sampler/thread_attach.h"
#include "sampler/thread_finder.h"
#include "sampler/thread_slots.h"

namespace profiling::sampler {

using internal::g_clocks;
using internal::g_run;

int start_all_threads(const ClockSettings& settings) {
  if (g_run.running) return 0;
  int error = install_sampling_handler();
  if (error != 0) return error;
  set_running_period(settings.hz);
  clear_fallback_reason();
  // The requested engine, else its fallbacks (perf ring -> perf-signal ->
  // cpu, engine.h): the last refusal is the reason given. No probe before
  // the ring: a process pays its perf_event_open calls at every start.
  start_engine(engine_of(settings.requested), &Engine::start);
  g_run.running = true;
  g_run.suspended = false;
  // Threads that exist now; threads created later attach themselves
  // (start_current_thread, from the pthread_create wrapper).
  attach_listed_threads();
  // Without the pthread_create wrapper (a static program), threads created
  // from now on are found by the thread finder.
  start_thread_finder();
  return 0;
}

void stop_all_threads() {
  for (ThreadClock& c : g_clocks)
    if (c.in_use && !c.ignored) release_clock(c);
  if (g_run.running) running_engine().stop();
  g_run.running = false;
}

bool sampling_running() { return g_run.running; }

void start_current_thread() {
  if (g_run.running && !g_run.suspended) attach(current_tid());
}

void stop_current_thread() {
  if (ThreadClock* c = find_clock(current_tid())) {
    flush_unreported_ticks(c->tid);
    release_clock(*c);
  }
}

void flush_unreported_ticks(pid_t only_tid) {
  // Only CPU-time timers report late (cpu, and wall's running threads);
  // perf's counters are read exactly.
  if (g_run.running) running_engine().flush_unreported(only_tid);
}

void ignore_current_thread() { ignore_thread(current_tid()); }

bool switch_to_cpu_timers(unsigned first, unsigned last) {
  // Only an engine whose descriptors a close reaches (perf-signal's
  // counters; the ring's mappings need none, perf_ring.h).
  if (!g_run.running || !running_engine().descriptor_in_range(first, last, true)) return false;
  const ClockSettings cpu{ClockKind::cpu, g_run.hz};
  // Each thread's perf interval is accounted as its clock is released; the
  // timers start a new one. The closing thread's own close then finds only
  // descriptors that are no longer ours.
  const ClockKind started_on = g_run.start_kind;
  stop_all_threads();
  start_all_threads(cpu);
  g_run.start_kind = started_on;
  set_fallback_reason("the program closed the perf counters' descriptors", "switched to", cpu_timer_engine());
  return true;
}

void fall_back_from_refused_start(const std::string& why) {
  if (!g_run.running || !running_engine().deferred_start_refused() || running_engine().fallback() == nullptr) return;
  // The deferred sample timer's ticks are accounted as each thread's clock
  // is released; the fallback starts new intervals.
  const ClockSettings settings{running_engine().fallback()->kind(), g_run.hz};
  stop_all_threads();
  start_all_threads(settings);
  set_fallback_reason(why.c_str(), "using", running_engine());
}

// A refused deferred start (the ring's locked memory) in a process that
// has not created a thread since: a CPU-time timer of the process samples
// it (perf_ring.cc), as the cpu clock's timers would.
ClockKind start_clock() { return running_engine().deferred_start_refused() ? ClockKind::cpu : g_run.start_kind; }
ClockKind running_clock() {
  return running_engine().deferred_start_refused() ? ClockKind::cpu : running_engine().kind();
}
unsigned running_hz() { return g_run.hz; }
std::string perf_fallback_reason() { return std::string(fallback_reason()); }

bool descriptor_in_range(unsigned first, unsigned last) {
  return running_engine().descriptor_in_range(first, last, false);
}

bool live_descriptor_in_range(unsigned first, unsigned last) {
  return running_engine().descriptor_in_range(first, last, true);
}

uint32_t drain_engine(bool wait) { return running_engine().drain(wait); }

void deliver_pending_samples() { drain_engine(false); }

}  // namespace profiling::sampler
