// Process-end hooks (process_end.h). ASYNC-SIGNAL-SAFE: run_process_end_hooks,
// report_end_write_failure.
#include "runtime/process_end.h"

#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstring>

#include "base/io.h"

namespace profiling::runtime {
namespace {

constexpr size_t kMaxHooks = 8;
constinit std::atomic<ProcessEndHook> g_hooks[kMaxHooks];

}  // namespace

void at_process_end(ProcessEndHook hook) {
  for (auto& slot : g_hooks) {
    ProcessEndHook expected = nullptr;
    if (slot.load(std::memory_order_acquire) == hook) return;
    if (slot.compare_exchange_strong(expected, hook, std::memory_order_acq_rel)) return;
    if (expected == hook) return;
  }
}

void run_process_end_hooks(ProcessEnd how, int signo) {
  for (auto& slot : g_hooks)
    if (ProcessEndHook hook = slot.load(std::memory_order_acquire)) hook(how, signo);
}

void report_end_write_failure(const char* what) {
  const char prefix[] = "profil: ";
  const char suffix[] = ": could not write the profile at the process's end\n";
  base::write_all(STDERR_FILENO, prefix, sizeof prefix - 1);
  base::write_all(STDERR_FILENO, what, std::strlen(what));
  base::write_all(STDERR_FILENO, suffix, sizeof suffix - 1);
}

}  // namespace profiling::runtime
