// The sampling signal handler and the SIGSEGV/SIGBUS fault guard.
//
// ASYNC-SIGNAL-SAFE: on_sampling_signal, on_fault and everything they call
// (sinks.cc, safe_access.S, the inline checks of cpu_timer_engine.h,
// perf_signal_engine.h and running_engine.h, perf_sample_weight and its
// jitter in perf_signal_engine.cc, the running engine's on_drain_signal,
// the unwinder of src/unwind/). A sample's path has no indirect call: the
// signal engines' checks and counts are inline. Only a drain signal goes
// through Engine's interface (running_engine.h), to whichever engine runs.
// errno is saved and restored; nothing allocates, locks or prints.
#include "sampler/handler.h"

#include <signal.h>
#include <ucontext.h>

#include <atomic>
#include <cerrno>

#include "base/errno_saver.h"
#include "base/safe_access.h"
#include "base/signal_mask.h"
#include "sampler/cpu_timer_engine.h"
#include "sampler/fault_signals.h"
#include "sampler/handler_stack.h"
#include "sampler/perf_signal_engine.h"
#include "sampler/program_mask.h"
#include "sampler/running_engine.h"
#include "sampler/sampler.h"
#include "sampler/signal_front.h"
#include "sampler/sinks.h"
#include "sampler/thread_slots.h"

namespace profiling::sampler {
namespace {

bool g_handler_installed = false;

// ASYNC-SIGNAL-SAFE.
__attribute__((noinline, cold)) void deliver_with_stack(uint64_t pc, uint32_t weight, const void* context) {
  deliver(pc, weight);
  if (unwind::StackTable* stacks = g_stack_table.load(std::memory_order_acquire)) deliver_stack(stacks, context, weight);
}
std::atomic<PeriodicHook> g_periodic_hook{nullptr};
__thread uint32_t t_ticks_since_hook __attribute__((tls_model("initial-exec")));

// ASYNC-SIGNAL-SAFE. Every 32 ticks of a thread's CPU time: the periodic
// hook (the preload runtime's checkpoint), outside the sinks' in-flight
// section. Counted in ticks, not signals: on a busy machine the kernel
// checks a CPU-time timer rarely (12 signals in a CPU-second seen, each
// worth ~80 ticks).
inline void run_periodic_hook(uint32_t weight) {
  t_ticks_since_hook += weight;
  if (t_ticks_since_hook >= 32) [[unlikely]] {
    t_ticks_since_hook = 0;
    if (PeriodicHook hook = g_periodic_hook.load(std::memory_order_acquire)) hook();
  }
}

// ASYNC-SIGNAL-SAFE. The perf ring's drains (each thread's drain timer, a
// few dozen a second at most) call the hook at each drain instead: the ticks of
// every thread arrive in whichever thread the kernel signals, so a
// per-thread count reached 32 only every 32 x the threads' ticks (a Go
// program of several threads that ends with a raw exit_group lost 11 % of
// its profile between checkpoints).
inline void run_periodic_hook_after_drain() {
  if (PeriodicHook hook = g_periodic_hook.load(std::memory_order_acquire)) hook();
}

// ASYNC-SIGNAL-SAFE. Is this SIGPROF one of ours: a drain signal, a
// CPU-time timer's, or one of our perf counters' (signal_front.h)?
inline bool is_our_signal(const siginfo_t* info) {
  if (info->si_code == SI_TIMER)
    return is_drain_timer_value(info->si_value.sival_ptr) || is_our_timer_value(info->si_value.sival_ptr);
  return info->si_code > 0 && info->si_code <= POLL_HUP && (is_drain_fd(info->si_fd) || is_our_perf_fd(info->si_fd));
}

// ASYNC-SIGNAL-SAFE. Our tick, on the thread's handler stack.
void take_sample(siginfo_t* info, void* context) {
  uint32_t weight;
  if ((info->si_code == SI_TIMER && is_drain_timer_value(info->si_value.sival_ptr)) ||
      (info->si_code != SI_TIMER && is_drain_fd(info->si_fd))) {
    // A drain timer or trigger (the perf ring's, perf_ring.h): the kernel
    // wrote the samples; the running engine delivers them.
    if (running_engine().on_drain_signal(context) != 0) run_periodic_hook_after_drain();
    return;
  }
  if (info->si_code == SI_TIMER) {
    // The kernel tick limits CPU-time timers (CONFIG_HZ): a signal that
    // stands for several periods is weighted by them (its overrun), so
    // counts measure CPU time at the requested rate.
    weight = timer_sample_weight(info->si_overrun);
    g_handlers_in_flight.fetch_add(1, std::memory_order_seq_cst);
    if (!count_timer_ticks(info->si_value.sival_ptr, weight,
                           static_cast<uint64_t>(static_cast<const ucontext_t*>(context)->uc_mcontext.gregs[REG_RIP]))) {
      g_handlers_in_flight.fetch_sub(1, std::memory_order_release);
      return;
    }
  } else {
    weight = perf_sample_weight(info->si_fd);
    if (weight == 0) return;  // an early signal after a period change
    count_perf_ticks(info->si_fd, weight);
    g_handlers_in_flight.fetch_add(1, std::memory_order_seq_cst);
  }
  const auto* uc = static_cast<const ucontext_t*>(context);
  const uint64_t pc = static_cast<uint64_t>(uc->uc_mcontext.gregs[REG_RIP]);
  // (In flight since the tick was counted.) Stacks on: the flat sample, then the stack, out of line, so that the
  // common path keeps nothing live across deliver() (bench/sampler.sh).
  if (g_stack_table.load(std::memory_order_relaxed) != nullptr) [[unlikely]]
    deliver_with_stack(pc, weight, context);
  else
    deliver(pc, weight);
  g_handlers_in_flight.fetch_sub(1, std::memory_order_release);
  run_periodic_hook(weight);
}

// ASYNC-SIGNAL-SAFE. The kernel's entry: a SIGPROF that is not one of our
// ticks is the program's (signal_front.h: a kill, its own ITIMER_PROF
// (SI_KERNEL), its own POSIX timer), handled where the kernel put it; ours
// moves to the thread's own stack first (handler_stack.h). Runs with the
// asynchronous signals blocked (base/signal_mask.h).
void on_sampling_signal(int signo, siginfo_t* info, void* context) {
  base::ErrnoSaver errno_saver;
  if (!is_our_signal(info)) {
    // A descriptor's SIGPROF that is not one of our counters' (one closed
    // with a signal still pending) goes only to a program that handles
    // SIGPROF: it may have set up such a descriptor itself.
    const bool from_descriptor = info->si_code > 0 && info->si_code <= POLL_HUP;
    if (!from_descriptor || front_program_has_handler(signo)) dispatch_program_sampling_signal(signo, info, context);
    return;
  }
  // The accounting asks what the thread's mask was before ours (the
  // kernel's frame holds it).
  const sigset_t* interrupted_mask = &static_cast<const ucontext_t*>(context)->uc_sigmask;
  base::InterruptedMaskScope interrupted(interrupted_mask);
  // The fault-safe loads need SIGSEGV and SIGBUS even where the program
  // blocks them (fault_signals.h: su died of it).
  FaultSignalsOpen fault_signals(interrupted_mask);
  struct Call {
    siginfo_t* info;
    void* context;
  } call{info, context};
  run_on_handler_stack([](void* opaque) {
    auto* c = static_cast<Call*>(opaque);
    take_sample(c->info, c->context);
  }, &call);
}

// ---- fault guard ----
bool g_guard_installed = false;

// ASYNC-SIGNAL-SAFE.
void on_fault(int signo, siginfo_t* info, void* context) {
  auto* uc = static_cast<ucontext_t*>(context);
  const auto pc = static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
  if (const uintptr_t landing_pad = base::safe_access_landing_pad(pc)) {
    // A sampling buffer went away: resume at the landing pad, which returns
    // the fault to the handler, which turns that sink off.
    uc->uc_mcontext.gregs[REG_RIP] = static_cast<greg_t>(landing_pad);
    return;
  }
  // A sent one let through only for our loads waits for the program.
  if (hold_sent_fault_signal(signo, info)) return;
  // The program's fault (or a sent SIGSEGV): its handler, or the default
  // action after the profile is written (signal_front.h).
  front_dispatch(signo, info, context);
}

}  // namespace

int install_sampling_handler() {
  if (g_handler_installed) return 0;
  if (!front_managed(kSamplingSignal)) {
    struct sigaction current{};
    if (real_sigaction(kSamplingSignal, nullptr, &current) != 0) return errno;
    // profil(2) through the C API: a program that handles SIGPROF itself
    // before profiling starts is refused rather than trampled (gperftools
    // does the same). Once we are in front, a handler the program installs
    // later gets its own SIGPROFs and never our ticks.
    const bool foreign = (current.sa_flags & SA_SIGINFO)
                             ? current.sa_sigaction != nullptr
                             : (current.sa_handler != SIG_DFL && current.sa_handler != SIG_IGN);
    if (foreign) return EBUSY;
  }
  // SA_RESTART: the program's blocking calls are restarted, not failed with
  // EINTR. SA_ONSTACK: a thread on its alternate stack stays there.
  if (int error = front_install(kSamplingSignal, on_sampling_signal, FrontKind::shared, SA_RESTART | SA_ONSTACK);
      error != 0)
    return error;
  g_handler_installed = true;
  return 0;
}

void discard_pending_sampling_signal() {
  if (!g_handler_installed) return;
  // Straight to the kernel: what the program asked for stays recorded.
  struct sigaction ours{};
  struct sigaction ignore{};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  real_sigaction(kSamplingSignal, &ignore, &ours);
  real_sigaction(kSamplingSignal, &ours, nullptr);
}

void set_periodic_hook(PeriodicHook hook) { g_periodic_hook.store(hook, std::memory_order_release); }

bool wants_drains_from_waiting_threads() { return running_engine().wants_drains_from_waiting_threads(); }

uint32_t drain_from_waiting_thread() {
  const uint32_t delivered = running_engine().drain(false);
  if (delivered != 0) run_periodic_hook_after_drain();
  return delivered;
}

void install_fault_guard() {
  if (g_guard_installed) return;
  // SA_NODEFER: a fault inside a program handler we chain to is still seen.
  front_install(SIGSEGV, on_fault, FrontKind::shared, SA_ONSTACK | SA_NODEFER);
  front_install(SIGBUS, on_fault, FrontKind::shared, SA_ONSTACK | SA_NODEFER);
  g_guard_installed = true;
}

}  // namespace profiling::sampler
