// The sampler's control surface: what the C API, the gmon runtime and the
// preload runtime use to start and stop sampling into their sinks.
//
// NOT async-signal-safe: every function here may allocate and takes the
// sampler's control lock. The handler side lives in handler.cc.
//
// Sinks. Sampling runs while at least one sink is installed; each tick of a
// thread's CPU time delivers (pc, weight) to every installed sink:
//   - the histogram: profil()/sprofil() regions of 16- or 32-bit bins;
//   - the pc buffer: pcsample(), one raw PC per tick into an array;
//   - the pc table: whole-process raw PCs with counts (profil run).
// The weight of a sample is the number of sampling periods it stands for
// (1 + timer overrun), so counts measure CPU time at the requested rate
// even where the kernel tick limits the timer.
#ifndef PROFIL_SAMPLER_SAMPLER_H
#define PROFIL_SAMPLER_SAMPLER_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/settings.h"
#include "sampler/bins.h"
#include "sampler/pc_table.h"

namespace profiling::unwind {
class StackTable;
}  // namespace profiling::unwind

namespace profiling::sampler {

// cpu: a CPU-time timer per thread (cpu_timer_engine.h).
// wall: cpu's timers for running threads, plus blocked threads sampled from
// /proc without interrupting them (wall_sampler.h).
// perf: task-clock samples the kernel writes into ring buffers, no signal
// per sample (perf_ring.h), falling back to perf_signal where no ring can
// be mapped. perf_signal: one task-clock counter per thread signalling its
// thread at each sample (the perf clock until 0.2; threads that block
// signals are not sampled; perf_signal_engine.h).
// The values, names and engines: one table, base/settings.h
// (PROFIL_CLOCK_TABLE): cpu 0, perf 1, automatic 2, wall 3, perf_signal 4.
#define PROFIL_CLOCK_ENUMERATOR(id, name, engine) id,
enum class ClockKind : uint8_t { PROFIL_CLOCK_TABLE(PROFIL_CLOCK_ENUMERATOR) };
#undef PROFIL_CLOCK_ENUMERATOR
inline constexpr int kClockKinds = base::kClockNameCount;

struct ClockSettings {
  ClockKind requested = ClockKind::cpu;
  unsigned hz = 100;
};

// Reads PROFIL_HZ / PROFIL_CLOCK / PROFIL_PERSONALITY once; later calls to
// the setters win. Returns the current settings.
ClockSettings clock_settings();
// Takes effect the next time sampling starts (or at once if running).
// Returns 0 or EINVAL.
int set_clock_settings(ClockSettings settings);
// What is running now (or ran last): the clock, the rate, why perf was refused.
ClockKind active_clock();
unsigned active_hz();
std::string clock_fallback_reason();

// ---- the histogram sink (profil, sprofil, the gmon runtime) ----
// Replaces the installed regions. Regions may overlap: where they do, the one
// with the higher offset wins (glibc's sprofil rule). `overflow`, when not
// null, receives in bin 0 every PC that falls in no region. Returns 0 or an
// errno value (EFAULT when a buffer is not writable memory).
struct HistogramSpec {
  std::vector<Region> regions;
  Region overflow{};  // used when has_overflow
  bool has_overflow = false;
  BinLimit limit = BinLimit::saturate;  // solaris: stop at 32767
};
int set_histogram(const HistogramSpec& spec);
void clear_histogram();
bool histogram_active();

// ---- the pc buffer sink (pcsample) ----
// Installs samples[0..capacity) and returns through *previous_count how many
// PCs the previous buffer received. capacity 0 / samples nullptr stops.
int set_pc_buffer(uintptr_t* samples, size_t capacity, long* previous_count);

// ---- the pc table sink (whole-process profiling) ----
// The table must outlive its installation; nullptr removes it.
void set_pc_table(PcTable* table);

// ---- the stack table sink (whole call stacks, issue 13) ----
// When a stack table is installed, the handler also unwinds the interrupted
// thread's stack (src/unwind/unwinder.h, at most max_depth frames, capped at
// kMaxStackDepth) and adds it with the sample's weight; the pc table and
// histograms keep the leaf alone. Builds the unwind tables of every loaded
// object first (milliseconds; not async-signal-safe). The table must outlive
// its installation; nullptr removes it.
inline constexpr uint32_t kMaxStackDepth = 512;
void set_stack_table(unwind::StackTable* table, uint32_t max_depth);
// Rebuilds the unwind tables for the objects loaded now (the dlopen
// interposer calls it; an object already known is not parsed again). A
// no-op while no stack table is installed. Not async-signal-safe.
void refresh_unwind_tables();
// The unwinder met a PC in no known object since the tables were built (a
// static program's dlopen, code mapped by hand): refresh_unwind_tables()
// is due.
bool unwind_tables_stale();

// ---- process events, called by the runtime ----
// Run in the thread that is about to exec: stops every timer and discards a
// pending sampling signal so the new program never receives it.
void before_exec();
// Exec failed: sampling resumes.
void after_failed_exec();
// pthread_atfork handlers.
void fork_prepare();
void fork_parent();
void fork_child();
// The program is about to create a thread (the pthread_create wrapper, in
// the creating thread, before the new one exists): deferred perf rings open
// now (perf_ring.cc), as the new thread inherits only events that exist.
void before_thread_creation();
// The program is about to install a seccomp filter (the prctl and syscall
// wrappers, runtime/seccomp_hooks.cc): deferred perf rings open now, and
// from then on the sampler issues no system call it did not issue before
// (issue 20: a filter that kills on perf_event_open or timer_create killed
// the program at the deferred opening, or at its next thread's timer).
// New threads and fork children are then left unsampled (accounted).
void before_seccomp_filter();
// ASYNC-SIGNAL-SAFE. May the sampler still create timers and open perf
// events (no filter of the program's since it started)?
bool late_system_calls_allowed();
// ASYNC-SIGNAL-SAFE. Does the sampler send itself SIGPROF now (any clock
// running: timers, counters, the ring's drain)?
bool sampling_signal_in_use();
// The clock this image started on (active_clock() is the one now: a
// program that closed the perf counters moved to CPU-time timers).
ClockKind clock_at_start();
// A thread starts or ends (called by the pthread_create wrapper).
void thread_started();
void thread_exiting();
// The calling thread is one of ours (a watcher) and is never sampled, nor
// attached by the thread finder (thread_finder.h).
void thread_not_sampled();
// Without the wrapper: clocks for the threads that appeared since the last
// call, none for those gone (the thread finder calls it).
void attach_new_threads();

// ---- synchronous faults (SIGSEGV, SIGBUS) ----
// Puts the handler in front of SIGSEGV and SIGBUS (signal_front.h) that
// turns a fault in a sampling buffer into "profiling off" (the page's
// promise) and gives every other one to the program's action: its handler,
// or the default action after the default-action hook (the preload runtime
// writes its profile there). Installed automatically when a user buffer is
// handed to a sink; the preload runtime installs it at start. Idempotent.
void install_fault_guard();

// ---- descriptors the program closes ----
// Called before the program closes every descriptor in [first, last]
// (close, close_range, closefrom): if one is a perf counter of ours, the
// process's sampling moves to CPU-time timers first, so a program that
// closes all its descriptors (daemons do) keeps being sampled.
void before_closing_descriptors(unsigned first, unsigned last);

// ---- CPU time no sample caught (profil run's accounting) ----
// Each thread's CPU clock is compared with the weighted ticks its sampling
// clock delivered (times the period). A thread whose signals are blocked,
// or whose perf counter the program closed with a raw system call, runs
// without samples; its gap is counted here with the cause, so that a
// profile can show it rather than lose it (docs/run.md, "Unsampled CPU
// time").
// between_ticks: the cpu clock's CPU-time timer is checked by the kernel
// only at a tick that finds the thread running, so a thread that ran in
// short slices between ticks carries CPU time its timer has not reported
// yet; it is reported at the next check, and lost only when the thread (or
// the process) ends first.
// ring_full: the perf clock's ring buffer was full when the kernel had a
// sample to write (PERF_RECORD_LOST: the drain came too late).
// in_kernel: the perf clocks sample user mode only (exclude_kernel, what
// perf_event_paranoid 2 allows): a period that ends in the kernel gives no
// sample, and its time reaches the profile with the thread's next sample
// (the counter's value weighs it). What a thread ran after its last sample
// on a CPU has no sample to carry it; beyond the noise, that is time whose
// periods all ended in the kernel (a shell forking a pipeline: 10-40 % of
// its CPU time, 90 % of which is system time).
enum class UnsampledCause : uint32_t {
  signals_blocked = 1,
  descriptor_closed = 2,
  unknown = 3,
  between_ticks = 4,
  ring_full = 5,
  in_kernel = 6
};
inline constexpr size_t kUnsampledCauses = 6;
inline constexpr size_t kUnsampledTids = 8;
struct UnsampledRow {
  uint64_t cpu_ns = 0;
  uint32_t threads = 0;
  int32_t tids[kUnsampledTids] = {};  // the first threads' ids
};
struct Unsampled {
  UnsampledRow rows[kUnsampledCauses];  // rows[cause - 1]
  uint64_t noise_ns = 0;  // gaps of threads within the noise (not shown)
};
// The noise rule: a thread's clock leaves up to a period unsampled at its
// end (a CPU-time timer's remainder; ±half a period on the perf clock),
// and a rate change or exec suspension loses at most one more. So a gap
// counts only when it is at least 2 periods and at least 5 % of the
// thread's CPU time.
bool unsampled_beyond_noise(uint64_t gap_ns, uint64_t cpu_ns, uint64_t period_ns);
// ASYNC-SIGNAL-SAFE (the dump calls it): the gaps of the threads that
// ended, plus those of every thread sampled now, measured now.
void unsampled_time(Unsampled* out);
// ASYNC-SIGNAL-SAFE: delivers the samples the perf ring holds now (its
// drains come with a CPU-time timer, which a busy machine reports late),
// for a writer about to read the sinks at a process's end (_exit, a fatal
// signal). Nothing on the other clocks.
void deliver_pending_samples();
// ASYNC-SIGNAL-SAFE. For a thread of the program about to wait for signals
// it blocks (the sigwait wrappers, runtime/signal_mask_hooks.cc): would the
// sampler have it drain now and then? The perf ring's drains come with
// SIGPROF; a program that blocks it in every thread (a daemon whose signal
// thread sigwaits) would fill the rings and lose the rest.
bool wants_drains_from_waiting_threads();
// ASYNC-SIGNAL-SAFE. Such a drain, then the periodic hook (the preload's
// checkpoint) as after a drain by the signal. Returns the ticks delivered.
uint32_t drain_from_waiting_thread();

// Called (ASYNC-SIGNAL-SAFE, from the sampling handler, in whichever thread
// was sampled) after every 32 ticks of a thread's sampled CPU time. The preload
// runtime writes a checkpoint of its dump there. nullptr removes it.
using PeriodicHook = void (*)();
void set_periodic_hook(PeriodicHook hook);

struct Stats {
  uint64_t signals = 0;        // sampling signals handled
  uint64_t ticks = 0;          // weighted ticks delivered
  uint64_t dropped = 0;        // ticks no sink could store
  uint64_t buffer_faults = 0;  // times a buffer fault turned a sink off
};
Stats stats();

}  // namespace profiling::sampler

#endif  // PROFIL_SAMPLER_SAMPLER_H
