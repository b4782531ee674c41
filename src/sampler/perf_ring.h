// The perf clock through the kernel's ring buffer: samples written by the
// kernel, from its timer interrupt, into buffers mapped in the process, with
// no signal per sample. A thread that blocks every signal (xz's workers) is
// sampled like any other.
//
// Design (docs/sampler.md, "The perf clock"):
//   - one task-clock event per online CPU for each thread that exists when
//     sampling starts (perf_event_open(pid = tid, cpu = c)), with inherit and
//     inherit_thread: every thread created later by any of them carries the
//     events along (Linux 5.13; a fork child does not), and an inherited
//     event writes into its parent's buffer. One ring per CPU for the whole
//     process (perf record's layout): the locked memory a user may map for
//     perf (kernel.perf_event_mlock_kb per CPU, then RLIMIT_MEMLOCK) is shared
//     by all of their processes, so one ring per thread would run out after a
//     few hundred threads across them.
//   - no descriptor is kept for the events that own a ring: the mapping holds
//     the event, so a program that closes every descriptor (closefrom) keeps
//     being sampled. The events of threads that existed at start other than
//     the first write into the same rings (PERF_EVENT_IOC_SET_OUTPUT) and
//     keep their descriptors (the kernel refuses to map them: EBUSY).
//   - no thread of ours, and no signal sent to the process: each thread's
//     own CPU-time timer (timer_create on its CPU clock, SIGEV_THREAD_ID)
//     sends it SIGPROF once per stretch of its CPU time short enough that
//     no ring can fill meanwhile (and at the preload runtime's checkpoint
//     cadence); the handler drains every ring into the sinks. Such a timer
//     expires only while its thread runs, so it never interrupts a wait
//     (issue 20). The sampling events themselves signal nothing: with O_ASYNC
//     the kernel signals at every overflow (__perf_event_overflow queues a
//     wakeup whenever the event has a fasync owner), whatever the watermark.
//     An idle process accrues no CPU time, so it is never woken.
//   - with a stack table installed, each record also carries the sampled
//     thread's registers and the top of its stack (PERF_SAMPLE_REGS_USER,
//     PERF_SAMPLE_STACK_USER, 8 KiB as perf record --call-graph dwarf),
//     unwound at the drain over that copy (unwind::StackWindow) with the
//     same tables as a live unwind: a thread that blocks every signal gets
//     whole stacks too.
//   - records lost because a ring was full (PERF_RECORD_LOST) are counted per
//     thread and shown as unsampled CPU time ("ring buffer full").
//   - deferred rings: a process that is single-threaded at start (and has
//     the pthread_create wrapper) opens one event to check that perf is
//     allowed, then maps nothing until its first period of CPU time, its
//     first pthread_create or its first seccomp filter, whichever comes
//     first; until then the drain timer, armed for one period of the
//     process's CPU time, and the thread's own CPU-time timer stand in
//     (the first signal samples the thread it interrupts).
//     Most short processes never map a ring (perf_ring_deferral.cc). A
//     deferred opening the kernel refuses (locked memory) moves the
//     process to the fallback at its next pthread_create; a process that
//     creates none stays sampled by that timer, on the cpu clock.
//   - the events are perf::EventSpec values and the rings are read with
//     the perf layer (src/perf/); the engine's jobs are split across
//     perf_ring*.cc (internal/perf_ring_state.h lists them).
//
// Its drain timers and triggers are drain signals (running_engine.h): the
// handler hands them to on_drain_signal() without naming this engine.
//
// ASYNC-SIGNAL-SAFE: drain(), on_drain_signal(), open_if_deferred(),
// refused(nullptr), deferred_start_refused(), gap_cause(),
// account_process() and wants_drains_from_waiting_threads(). The rest runs
// under the sampler's control lock.
#ifndef PROFIL_SAMPLER_PERF_RING_H
#define PROFIL_SAMPLER_PERF_RING_H

#include <atomic>
#include <cstdint>
#include <string>

#include "sampler/engine.h"

namespace profiling::sampler {

class PerfRingEngine final : public Engine {
 public:
  ClockKind kind() const override { return ClockKind::perf; }
  const char* describe() const override { return "the perf ring buffer"; }
  // Where no ring can be mapped (the user's locked memory for perf is used
  // up, an old kernel).
  Engine* fallback() const override { return &perf_signal_engine(); }
  int start(uint64_t period_ns, std::string* why) override;
  void stop() override;
  // Inherited events sample a new thread already; its slot's weights start.
  // ...and each thread gets its drain timer (perf_ring_triggers.cc).
  bool thread_attached(ThreadClock& c) override;
  void arm_thread(ThreadClock& c, bool on) override;
  void thread_detaching(ThreadClock& c) override;
  void thread_released(ThreadClock& c) override;
  void forget_in_child(ThreadClock& c) override;
  int fork_child(uint64_t period_ns, std::string* why) override;
  void suspend_for_exec() override;
  void resume_after_exec() override;
  uint32_t drain(bool wait) override;
  // The drain timer's or trigger's signal (context: the interrupted
  // thread's, for the sample a deferred ring's timer takes): drain, re-arm.
  uint32_t on_drain_signal(const void* context) override;
  // While rings are open: their drains come with SIGPROF.
  bool wants_drains_from_waiting_threads() const override;
  // Each CPU's event of a thread keeps its own remainder.
  unsigned noise_periods() const override;
  UnsampledCause gap_cause(const ThreadClock& c, bool self) const override;
  // The rings' samples not read yet, and the lost records no thread owns.
  void account_process(Unsampled* out, uint64_t period_ns) override;
  // refused(nullptr): the deferred rings' timer samples, as cpu's would.
  bool deferred_start_refused() const override { return refused(nullptr); }
  // ASYNC-SIGNAL-SAFE: opens the rings now if they are deferred (the
  // program is about to create a thread or block the sampling signal).
  void open_if_deferred();
  // Are the rings deferred (not opened yet, perf_ring_deferral.cc)?
  bool deferred() const;
  // Did a deferred opening fail (the user's locked memory)? Why, in *why.
  bool refused(std::string* why) const;

  bool running() const;
  // Do the records carry registers and stack (a stack table was installed
  // when sampling started)?
  bool takes_stacks() const;
  // ASYNC-SIGNAL-SAFE: has a drain found a ring full since start?
  bool overflowed() const;
  // How many rings (online CPUs) sampling uses: a thread's samples lag its
  // CPU time by up to a period on each CPU it ran on (each CPU's event
  // keeps its own remainder).
  unsigned rings() const;
  // ASYNC-SIGNAL-SAFE: a descriptor the engine keeps for thread tid (the
  // SET_OUTPUT events of a thread that existed at start), or -1.
  int descriptor_of(pid_t tid) const;
};

extern PerfRingEngine g_perf_ring;

}  // namespace profiling::sampler

#endif  // PROFIL_SAMPLER_PERF_RING_H
