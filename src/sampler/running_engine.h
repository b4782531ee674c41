// Which engine runs (engine.h), chosen with its fallbacks, at what period,
// and how a signal reaches it. The dispatcher (thread_clocks.h) chooses;
// the handler, the accounting and the engines read what was chosen here,
// so none of them names another engine.
//
// A drain signal: an engine whose samples the kernel writes (the perf ring)
// asks to be drained by a timer whose sigev_value is &g_drain_marker, or by
// a descriptor marked in g_drain_fd; the handler recognizes either with the
// inline checks below and calls running_engine().on_drain_signal() — a
// virtual call, on that path alone (a few dozen a second), never on a
// sample's.
//
// ASYNC-SIGNAL-SAFE: running_engine, running_period_ns, is_drain_timer_value,
// is_drain_fd. The rest runs under the sampler's control lock (g_run is
// written under it by thread_clocks.cc, fork_exec.cc and running_engine.cc).
#ifndef PROFIL_SAMPLER_RUNNING_ENGINE_H
#define PROFIL_SAMPLER_RUNNING_ENGINE_H

#include <atomic>
#include <cstdint>
#include <string>

#include "sampler/engine.h"

namespace profiling::sampler {

namespace internal {
// The engine running (or that ran last). Read without the lock by the dump,
// the handler's drains and the close interposer; engines are static
// objects, so a stale one is still a valid object.
extern std::atomic<Engine*> g_engine;
// Hidden, so that perf_sample_weight's read of it, once a sample, is one
// RIP-relative load as a static's would be (not an address from the GOT).
extern std::atomic<uint64_t> g_period_ns __attribute__((visibility("hidden")));
// The drain timers' sigev_value points here.
extern char g_drain_marker;
// Per descriptor number: is a SIGPROF with this si_fd a drain trigger's
// (perf_ring_triggers.cc)?
inline constexpr int kMaxDrainFd = 1 << 16;
extern std::atomic<bool> g_drain_fd[kMaxDrainFd];
}  // namespace internal

// The engine running, or that ran last; the cpu clock's before any.
inline Engine& running_engine() {
  Engine* running = internal::g_engine.load(std::memory_order_acquire);
  return running != nullptr ? *running : cpu_timer_engine();
}
// Its sampling period (ns): what each tick weighs.
inline uint64_t running_period_ns() { return internal::g_period_ns.load(std::memory_order_relaxed); }

// Is this the sigev_value of a drain timer?
inline bool is_drain_timer_value(const void* value) { return value == &internal::g_drain_marker; }
// Is a SIGPROF with this si_fd a drain trigger's?
inline bool is_drain_fd(int fd) {
  return static_cast<unsigned>(fd) < static_cast<unsigned>(internal::kMaxDrainFd) &&
         internal::g_drain_fd[fd].load(std::memory_order_acquire);
}

// ---- under the control lock ----
struct RunState {
  bool running = false;
  bool suspended = false;  // for an exec (clocks_fork_exec.h)
  unsigned hz = 100;
  // The clock the image started on (what profil run reports it asked for
  // and got): the engine start_all_threads chose, or the one a refused
  // deferred start fell back to; a later switch to CPU-time timers does not
  // change it.
  ClockKind start_kind = ClockKind::cpu;
};
namespace internal {
extern RunState g_run;
}  // namespace internal

// The engine of a ClockKind: PROFIL_CLOCK_TABLE's third column.
Engine& engine_of(ClockKind kind);
// Sets the period the engines sample at (before they start).
void set_running_period(unsigned hz);
// Starts `first` with how (&Engine::start, or &Engine::fork_child in a fork
// child) at the running period, else its fallbacks (perf ring ->
// perf-signal -> cpu, engine.h), the last refusal being the reason given.
// What started becomes running_engine(), and the image's start clock.
Engine& start_engine(Engine& first, int (Engine::*how)(uint64_t, std::string*));
// Why the process runs `next` rather than what it asked for: "<what>;
// <how> <next's description>". "" clears it.
void set_fallback_reason(const char* what, const char* how, const Engine& next);
void clear_fallback_reason();
const char* fallback_reason();

}  // namespace profiling::sampler

#endif  // PROFIL_SAMPLER_RUNNING_ENGINE_H
