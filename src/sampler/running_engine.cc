// Which engine runs, and its fallbacks (running_engine.h).
//
// ASYNC-SIGNAL-SAFE: what the header marks so (inline there). Everything
// here runs under the sampler's control lock.
#include "sampler/running_engine.h"

#include <cstddef>
#include <cstdio>

namespace profiling::sampler {
namespace internal {
constinit std::atomic<Engine*> g_engine{nullptr};
constinit std::atomic<uint64_t> g_period_ns{10'000'000};
char g_drain_marker;
constinit std::atomic<bool> g_drain_fd[kMaxDrainFd];
constinit RunState g_run;
}  // namespace internal

namespace {

// The engine of each ClockKind: PROFIL_CLOCK_TABLE's third column.
#define PROFIL_CLOCK_ENGINE_ROW(id, name, engine) &engine,
Engine& (*const kEngineOf[])() = {PROFIL_CLOCK_TABLE(PROFIL_CLOCK_ENGINE_ROW)};
#undef PROFIL_CLOCK_ENGINE_ROW
static_assert(sizeof kEngineOf / sizeof kEngineOf[0] == kClockKinds);

// Plain storage, constant-initialized: sampling can start before this
// library's dynamic initializers run (glibc's crti calls __gmon_start__, and
// so __monstartup, from libc's own _init).
char g_fallback_reason[256];

}  // namespace

Engine& engine_of(ClockKind kind) { return kEngineOf[static_cast<size_t>(kind)](); }

void set_running_period(unsigned hz) {
  internal::g_run.hz = hz;
  internal::g_period_ns.store(1'000'000'000ull / hz, std::memory_order_relaxed);
}

Engine& start_engine(Engine& first, int (Engine::*how)(uint64_t, std::string*)) {
  Engine* engine = &first;
  const uint64_t period = running_period_ns();
  for (std::string why; (engine->*how)(period, &why) != 0; why.clear()) {
    Engine* next = engine->fallback();
    if (next == nullptr) break;  // no engine without a fallback fails to start
    set_fallback_reason(why.c_str(), "using", *next);
    engine = next;
  }
  internal::g_engine.store(engine, std::memory_order_release);
  internal::g_run.start_kind = engine->kind();
  return *engine;
}

void set_fallback_reason(const char* what, const char* how, const Engine& next) {
  std::snprintf(g_fallback_reason, sizeof g_fallback_reason, "%s; %s %s", what, how, next.describe());
}

void clear_fallback_reason() { g_fallback_reason[0] = '\0'; }

const char* fallback_reason() { return g_fallback_reason; }

}  // namespace profiling::sampler
