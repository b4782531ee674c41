// One sampling source behind one interface (after async-profiler's Engine):
// what starts and stops sampling for the whole process, gives each thread
// what samples it (a timer, a counter, or nothing when the kernel follows
// threads by itself), follows forks and execs, and says why a thread's CPU
// time went unsampled. The dispatcher (thread_clocks.h) owns the
// per-thread slots (thread_slots.h) and the accounting (unsampled.h;
// sampler.h, "CPU time no sample caught") and calls the running engine
// (running_engine.h) without naming it; an engine fills each slot's ticks
// as its samples arrive.
//
// The engines: cpu_timer_engine.h (cpu), perf_signal_engine.h
// (perf-signal), perf_ring.h (perf, auto), wall_sampler.h (wall).
//
// Adding a clock takes:
//   1. one new file (with its header) defining a class derived from Engine,
//      one static object of it (constant-initialized: sampling can start
//      before dynamic initializers run) and `Engine& <name>_engine()`
//      returning it;
//   2. one row in PROFIL_CLOCK_TABLE (base/settings.h): its ClockKind
//      enumerator, its PROFIL_CLOCK name and that function. ClockKind, the
//      names (PROFIL_CLOCK, profil run --clock and their messages) and the
//      engine table (running_engine.cc) are made from it.
// What an engine keeps per thread goes in the thread's slot (ThreadClock's
// timer or perf_fd) or in an array of its own indexed by slot_index(c)
// (the ring's per-CPU shares); what it keeps per process, in its file.
// A clock the C API (include/profil/profil.h) or profraw must name also
// needs its id there: those are public numbers, kept apart on purpose.
// If its samples arrive by a signal, the handler (handler.cc) must
// recognize them from the siginfo (an inline check the engine's header
// provides) and count them against their slot: the per-sample path is
// not a virtual call. An engine whose samples the kernel writes and that
// wants draining by a signal marks its timers and descriptors as drain
// signals (running_engine.h); the handler then calls on_drain_signal.
//
// Threading: everything here runs under the sampler's control lock except
// what is marked ASYNC-SIGNAL-SAFE (drain, on_drain_signal,
// wants_drains_from_waiting_threads, gap_cause, account_process,
// deferred_start_refused, descriptor_in_range), which the handler, the
// dump and close() reach.
#ifndef PROFIL_SAMPLER_ENGINE_H
#define PROFIL_SAMPLER_ENGINE_H

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "sampler/sampler.h"

namespace profiling::sampler {

struct ThreadClock;  // a thread's slot (thread_slots.h)

class Engine {
 public:
  // Which clock this is while it runs (active_clock(); its name is
  // base::kClockNames[kind]).
  virtual ClockKind kind() const = 0;
  // How it samples, for a fallback reason ("...; using <describe()>").
  virtual const char* describe() const = 0;
  // The engine to run when this one cannot start (start or fork_child
  // failed): perf ring -> perf-signal -> cpu. nullptr: it always starts.
  virtual Engine* fallback() const { return nullptr; }

  // Starts sampling the process at period_ns (before any thread is
  // attached). 0, or an errno value with *why saying what failed (the
  // caller falls back).
  virtual int start(uint64_t period_ns, std::string* why) = 0;
  // After every thread was detached.
  virtual void stop() = 0;

  // A thread gets slot c (c.tid is set, the slot is not in use yet): create
  // what samples it, not armed (arm_thread follows). false: it cannot be
  // sampled (gone, refused), and the slot stays free. An engine that
  // samples new threads by itself (inherited perf events) only resets what
  // it keeps per slot.
  virtual bool thread_attached(ThreadClock& c) = 0;
  // Starts or stops what samples thread c (attach, exec suspension).
  virtual void arm_thread(ThreadClock&, bool /*on*/) {}
  // Thread c loses its slot (it ended, sampling stops): deliver what the
  // engine still holds of it, before its accounting is closed.
  virtual void thread_detaching(ThreadClock&) {}
  // ...then, after the accounting: free what samples it.
  virtual void thread_released(ThreadClock&) {}

  // fork, in the child, for every slot the parent's threads had: forget
  // what the parent owns (never free it: the parent still uses it); then
  // fork_child: sample the child's only thread (attached after it), at
  // period_ns (running_period_ns()). An engine that keeps nothing per
  // process but the period, which the child has, has nothing to do.
  virtual void forget_in_child(ThreadClock&) {}
  virtual int fork_child(uint64_t /*period_ns*/, std::string* /*why*/) { return 0; }
  // exec: no sampling signal may reach the new image (every thread is
  // disarmed too); a failed exec resumes.
  virtual void suspend_for_exec() {}
  virtual void resume_after_exec() {}

  // ASYNC-SIGNAL-SAFE: deliver what the engine holds that the sinks have not
  // seen yet. wait: the caller is not a signal handler, so it may wait for
  // a handler in another thread to let go of a buffer. Returns the ticks
  // delivered.
  virtual uint32_t drain(bool /*wait*/) { return 0; }
  // ASYNC-SIGNAL-SAFE: one of its drain signals (running_engine.h) reached
  // the handler in the thread it interrupted (context: that thread's).
  // Returns the ticks delivered (the handler then runs the periodic hook).
  virtual uint32_t on_drain_signal(const void* /*context*/) { return 0; }
  // ASYNC-SIGNAL-SAFE: should a thread of the program that waits for
  // signals it blocks drain now and then (sampler.h)? An engine drained by
  // signals would otherwise fill its buffers while every thread blocks them.
  virtual bool wants_drains_from_waiting_threads() const { return false; }
  // Before the clocks stop for good (the last sink goes, a thread ends):
  // deliver what ran but the kernel has not reported yet (CPU-time timers:
  // cpu_timer_engine.h). only_tid 0: every thread.
  virtual void flush_unreported(pid_t /*only_tid*/) {}

  // ---- accounting ----
  // Do its samples measure each thread's CPU time? (Not wall's: it samples
  // sleep too.) The accounting measures only such clocks.
  virtual bool accounted() const { return true; }
  // How many periods of a thread's CPU time its samples may lag (one
  // remainder per ring on the perf ring).
  virtual unsigned noise_periods() const { return 1; }
  // ASYNC-SIGNAL-SAFE: why thread c (self: the caller) ran unsampled
  // beyond the noise.
  virtual UnsampledCause gap_cause(const ThreadClock& c, bool self) const = 0;
  // ASYNC-SIGNAL-SAFE: before the live threads are measured (the dump):
  // deliver what is pending, and add what no thread owns to *out.
  virtual void account_process(Unsampled* /*out*/, uint64_t /*period_ns*/) {}
  // ASYNC-SIGNAL-SAFE: did a deferred part of its start fail (the perf
  // ring's rings, refused for locked memory)? It then samples as the cpu
  // clock does (a CPU-time timer), and says so (running_clock), until the
  // process moves to its fallback (thread_clocks.h,
  // fall_back_from_refused_start).
  virtual bool deferred_start_refused() const { return false; }

  // ASYNC-SIGNAL-SAFE: is a descriptor that sampling needs in [first,
  // last] (the program is about to close the range)? live: count only
  // descriptors still open on what we opened (forget the others). When
  // one is, the process moves to the cpu clock, which no close can reach.
  virtual bool descriptor_in_range(unsigned /*first*/, unsigned /*last*/, bool /*live*/) { return false; }

 protected:
  ~Engine() = default;  // engines are static objects, never deleted
};

// The engines of PROFIL_CLOCK_TABLE (base/settings.h), each defined in its
// own file.
#define PROFIL_CLOCK_ENGINE_ACCESSOR(id, name, engine) Engine& engine();
PROFIL_CLOCK_TABLE(PROFIL_CLOCK_ENGINE_ACCESSOR)
#undef PROFIL_CLOCK_ENGINE_ACCESSOR

}  // namespace profiling::sampler

#endif  // PROFIL_SAMPLER_ENGINE_H
