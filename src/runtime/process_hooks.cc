#include "runtime/process_hooks.h"

#include <pthread.h>
#include <unistd.h>

#include <atomic>

#include "sampler/sampler.h"

namespace profiling::runtime {
namespace {

pthread_once_t g_hooks_once = PTHREAD_ONCE_INIT;
// The pid the sampler's state belongs to. A vfork child shares our memory
// but has another pid: it must not touch that state (it has no timers
// anyway, and no pending signals).
std::atomic<pid_t> g_owner_pid{0};

void on_fork_prepare() { sampler::fork_prepare(); }
void on_fork_parent() { sampler::fork_parent(); }
void on_fork_child() {
  g_owner_pid.store(::getpid(), std::memory_order_relaxed);
  sampler::fork_child();
}

void register_hooks() {
  g_owner_pid.store(::getpid(), std::memory_order_relaxed);
  pthread_atfork(on_fork_prepare, on_fork_parent, on_fork_child);
}

}  // namespace

void ensure_process_hooks() { pthread_once(&g_hooks_once, register_hooks); }

bool process_owns_sampler() { return g_owner_pid.load(std::memory_order_relaxed) == ::getpid(); }

}  // namespace profiling::runtime
