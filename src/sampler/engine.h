// One sampling source behind one interface (after async-profiler's Engine):
// what starts and stops sampling for the whole process, follows its threads,
// forks and execs, and names itself. thread_clocks.cc owns the per-thread
// slots and the accounting (sampler.h, "CPU time no sample caught"); an
// engine fills each slot's ticks as its samples arrive.
//
// A new clock is one new file implementing Engine, one entry in ClockKind
// (sampler.h) and in the name table (base/settings.h), one case in
// thread_clocks.cc's engine_for().
//
// Only drain() may be called from a signal handler.
#ifndef PROFIL_SAMPLER_ENGINE_H
#define PROFIL_SAMPLER_ENGINE_H

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace profiling::sampler {

class Engine {
 public:
  // The clock's name as PROFIL_CLOCK spells it (base/settings.h).
  virtual const char* name() const = 0;
  // Starts sampling every thread of the process at period_ns. 0, or an
  // errno value with *why saying what failed (the caller falls back).
  virtual int start(uint64_t period_ns, std::string* why) = 0;
  virtual void stop() = 0;
  // A thread got its accounting slot (the pthread_create wrapper, the
  // thread finder) or is about to lose it (it ends). An engine that samples
  // new threads by itself (inherited perf events) has nothing to do here.
  virtual void thread_attached(pid_t tid) = 0;
  virtual void thread_detaching(pid_t tid) = 0;
  // fork, in the child: forget what belongs to the parent (never free it:
  // the parent still uses it), then sample the child's only thread.
  virtual int fork_child(uint64_t period_ns, std::string* why) = 0;
  // exec: no sampling signal may reach the new image; a failed exec resumes.
  virtual void suspend_for_exec() = 0;
  virtual void resume_after_exec() = 0;
  // ASYNC-SIGNAL-SAFE: deliver what the engine holds that the sinks have not
  // seen yet. wait: the caller is not a signal handler, so it may wait for
  // a handler in another thread to let go of a buffer. Returns the ticks
  // delivered.
  virtual uint32_t drain(bool wait) = 0;

 protected:
  ~Engine() = default;  // engines are static objects, never deleted
};

}  // namespace profiling::sampler

#endif  // PROFIL_SAMPLER_ENGINE_H
