// The clocks across exec and fork (fork_exec.h). NOT async-signal-safe:
// runs under the sampler's control lock.
#include "sampler/fork_exec.h"

#include "sampler/engine.h"
#include "sampler/handler.h"
#include "sampler/running_engine.h"
#include "sampler/thread_attach.h"
#include "sampler/thread_finder.h"
#include "sampler/thread_slots.h"
#include "sampler/unsampled.h"

namespace profiling::sampler {

using internal::g_clocks;
using internal::g_run;

void suspend_for_exec() {
  if (!g_run.running) return;
  g_run.suspended = true;
  running_engine().suspend_for_exec();
  for (ThreadClock& c : g_clocks)
    if (c.in_use && !c.ignored) running_engine().arm_thread(c, false);
  discard_pending_sampling_signal();
}

void resume_after_exec() {
  if (!g_run.running || !g_run.suspended) return;
  g_run.suspended = false;
  running_engine().resume_after_exec();
  for (ThreadClock& c : g_clocks)
    if (c.in_use && !c.ignored) running_engine().arm_thread(c, true);
}

void reset_in_child() {
  // What the parent's threads had is the engine's to forget (its timers are
  // not inherited; its perf descriptors are copies the parent still uses).
  for (ThreadClock& c : g_clocks) {
    if (!c.in_use) continue;
    if (!c.ignored) running_engine().forget_in_child(c);
    c = ThreadClock{};
  }
  reset_accounting();  // the parent's threads are not the child's
  // The child's own events and rings (perf_ring.h: none are inherited),
  // its watcher; or the fallback's.
  if (g_run.running) start_engine(running_engine(), &Engine::fork_child);
  if (g_run.running && !g_run.suspended) attach(current_tid());
  restart_thread_finder_in_child();
}

}  // namespace profiling::sampler
