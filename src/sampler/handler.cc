// The sampling signal handler and the SIGSEGV/SIGBUS fault guard.
//
// ASYNC-SIGNAL-SAFE: on_sampling_signal, on_fault and everything they call
// (sinks.cc, safe_access.S, the jitter functions of thread_clocks.cc).
// errno is saved and restored; nothing allocates, locks or prints.
#include "sampler/handler.h"

#include <signal.h>
#include <ucontext.h>

#include <atomic>
#include <cerrno>

#include "base/errno_saver.h"
#include "sampler/safe_access.h"
#include "sampler/sampler.h"
#include "sampler/sinks.h"
#include "sampler/thread_clocks.h"

namespace profiling::sampler {
namespace {

bool g_handler_installed = false;

// ASYNC-SIGNAL-SAFE.
void on_sampling_signal(int, siginfo_t* info, void* context) {
  base::ErrnoSaver errno_saver;
  uint32_t weight;
  if (info->si_code == SI_TIMER) {
    if (!is_our_timer_value(info->si_value.sival_ptr)) return;  // not our timer
    // The kernel tick limits CPU-time timers (CONFIG_HZ): a signal that
    // stands for several periods is weighted by them (its overrun), so
    // counts measure CPU time at the requested rate.
    weight = timer_sample_weight(info->si_overrun);
  } else if (info->si_code > 0 && info->si_code <= POLL_HUP && is_our_perf_fd(info->si_fd)) {
    weight = perf_sample_weight(info->si_fd);
    if (weight == 0) return;  // an early signal after a period change
  } else {
    return;  // kill(), sigqueue(), someone else's timer: not a tick
  }
  const auto* uc = static_cast<const ucontext_t*>(context);
  const uint64_t pc = static_cast<uint64_t>(uc->uc_mcontext.gregs[REG_RIP]);
  g_handlers_in_flight.fetch_add(1, std::memory_order_seq_cst);
  deliver(pc, weight);
  g_handlers_in_flight.fetch_sub(1, std::memory_order_release);
}

// ---- fault guard ----
struct sigaction g_previous_segv;
struct sigaction g_previous_bus;
std::atomic<FatalFaultHook> g_fatal_hook{nullptr};
bool g_guard_installed = false;

// ASYNC-SIGNAL-SAFE.
void on_fault(int signo, siginfo_t* info, void* context) {
  auto* uc = static_cast<ucontext_t*>(context);
  const auto pc = static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
  if (const uintptr_t landing_pad = safe_access_landing_pad(pc)) {
    // A sampling buffer went away: resume at the landing pad, which returns
    // the fault to the handler, which turns that sink off.
    uc->uc_mcontext.gregs[REG_RIP] = static_cast<greg_t>(landing_pad);
    return;
  }
  if (FatalFaultHook hook = g_fatal_hook.load(std::memory_order_acquire)) {
    base::ErrnoSaver errno_saver;
    hook(signo);
  }
  const struct sigaction& previous = signo == SIGBUS ? g_previous_bus : g_previous_segv;
  if (previous.sa_flags & SA_SIGINFO) {
    if (previous.sa_sigaction != nullptr) {
      previous.sa_sigaction(signo, info, context);
      return;
    }
  } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
    previous.sa_handler(signo);
    return;
  }
  // Default action: put it back and return; the faulting instruction runs
  // again and the kernel kills the process as it would have (core, status).
  ::sigaction(signo, &previous, nullptr);
}

}  // namespace

int install_sampling_handler() {
  if (g_handler_installed) return 0;
  struct sigaction current{};
  if (::sigaction(kSamplingSignal, nullptr, &current) != 0) return errno;
  const bool foreign = (current.sa_flags & SA_SIGINFO)
                           ? current.sa_sigaction != nullptr
                           : (current.sa_handler != SIG_DFL && current.sa_handler != SIG_IGN);
  if (foreign) return EBUSY;
  struct sigaction action{};
  action.sa_sigaction = on_sampling_signal;
  // SA_RESTART: the program's blocking calls are restarted, not failed with
  // EINTR. SA_ONSTACK: a thread on its alternate stack stays there.
  action.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  if (::sigaction(kSamplingSignal, &action, nullptr) != 0) return errno;
  g_handler_installed = true;
  return 0;
}

void discard_pending_sampling_signal() {
  if (!g_handler_installed) return;
  struct sigaction ours{};
  struct sigaction ignore{};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  ::sigaction(kSamplingSignal, &ignore, &ours);
  ::sigaction(kSamplingSignal, &ours, nullptr);
}

void install_fault_guard() {
  if (g_guard_installed) return;
  struct sigaction action{};
  action.sa_sigaction = on_fault;
  // SA_NODEFER: a fault inside a program handler we chain to is still seen.
  action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGSEGV, &action, &g_previous_segv);
  ::sigaction(SIGBUS, &action, &g_previous_bus);
  g_guard_installed = true;
}

void set_fatal_fault_hook(FatalFaultHook hook) { g_fatal_hook.store(hook, std::memory_order_release); }

}  // namespace profiling::sampler
