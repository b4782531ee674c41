// Sitting in front of a signal the program uses too (signal_front.h).
//
// ASYNC-SIGNAL-SAFE: front_managed, front_sigaction, front_dispatch,
// front_program_has_handler, real_sigaction and everything they call (the
// sigaction and sigprocmask system calls, raise). front_install,
// front_before_exec and front_after_failed_exec run at start or under the
// sampler's control lock.
#include "sampler/signal_front.h"

#include <pthread.h>
#include <signal.h>
#include <ucontext.h>

#include <atomic>
#include <cerrno>

#include "base/errno_saver.h"
#include "base/signal_mask.h"
#include "sampler/handler_stack.h"

// glibc's own entry point (exported since GLIBC_2.2.5, and in libc.a):
// sigaction is a weak alias of it, so the sigaction() libprofil.so exports
// never shadows this one.
extern "C" int __sigaction(int, const struct sigaction*, struct sigaction*);

namespace profiling::sampler {
namespace {

// The program's action for one signal. sigaction() may be called by one
// thread while a handler reads the action in another, and from a handler
// itself, so there is no lock: each change is written to the next of a few
// slots and then published with one atomic store; a reader copies the slot
// it loaded. A slot is reused only after kSlots further changes of the same
// signal, far more than can happen while a handler copies 152 bytes.
constexpr unsigned kSlots = 8;
struct ProgramAction {
  struct sigaction slots[kSlots];
  std::atomic<unsigned> next;
  std::atomic<const struct sigaction*> current;
};

struct Front {
  std::atomic<bool> managed;
  FrontKind kind;
  SignalHandler ours;
  int shared_flags;
};

constinit Front g_fronts[NSIG];
constinit ProgramAction g_program[NSIG];
constinit std::atomic<DefaultActionHook> g_default_hook{nullptr};
// Which signals front_before_exec set to SIG_IGN (to undo a failed exec).
constinit bool g_ignored_for_exec[NSIG];

bool valid(int signo) { return signo > 0 && signo < NSIG; }

bool is_default(const struct sigaction& action) {
  return !(action.sa_flags & SA_SIGINFO) && action.sa_handler == SIG_DFL;
}

bool is_ignore(const struct sigaction& action) {
  return !(action.sa_flags & SA_SIGINFO) && action.sa_handler == SIG_IGN;
}

bool is_handler(const struct sigaction& action) {
  if (action.sa_flags & SA_SIGINFO) return action.sa_sigaction != nullptr;
  return action.sa_handler != SIG_DFL && action.sa_handler != SIG_IGN;
}

struct sigaction program_action(int signo) {
  const struct sigaction* current = g_program[signo].current.load(std::memory_order_acquire);
  if (current == nullptr) {
    struct sigaction none{};
    none.sa_handler = SIG_DFL;
    return none;
  }
  return *current;
}

void record_program_action(int signo, const struct sigaction& action) {
  ProgramAction& p = g_program[signo];
  const unsigned slot = p.next.fetch_add(1, std::memory_order_relaxed) % kSlots;
  p.slots[slot] = action;
  p.current.store(&p.slots[slot], std::memory_order_release);
}

// What the kernel gets for a signal in front, given the program's action.
int install_in_kernel(int signo, const struct sigaction& program) {
  const Front& front = g_fronts[signo];
  struct sigaction kernel{};
  kernel.sa_sigaction = front.ours;
  if (front.kind == FrontKind::shared) {
    // Every asynchronous signal blocked while our handler runs (issue 20:
    // a program's handler running on top of ours could jump out of it, a
    // checkpoint half-written); front_dispatch gives the program's handler
    // the mask the program asked for.
    kernel.sa_flags = front.shared_flags | SA_SIGINFO;
    kernel.sa_mask = base::asynchronous_signals();
  } else if (is_ignore(program)) {
    // Ignored in the kernel: an ignored signal must not interrupt system
    // calls, nor be seen at all.
    return real_sigaction(signo, &program, nullptr);
  } else {
    kernel.sa_mask = program.sa_mask;
    kernel.sa_flags = (program.sa_flags & ~SA_RESETHAND) | SA_SIGINFO;
    if (is_default(program)) {
      // Only the profile is written here: on the alternate stack (a stack
      // overflow still gets there), not interrupted by other signals.
      kernel.sa_flags |= SA_ONSTACK;
      kernel.sa_mask = base::asynchronous_signals();
    }
  }
  return real_sigaction(signo, &kernel, nullptr);
}

bool is_synchronous_fault(int signo, const siginfo_t* info) {
  // si_code > 0 is the kernel's own report (SI_KERNEL, SEGV_MAPERR...); a
  // fault returns to the faulting instruction, which faults again under the
  // default action. A sent one (si_code <= 0) has no instruction to repeat.
  if (info == nullptr || info->si_code <= 0) return false;
  return signo == SIGSEGV || signo == SIGBUS || signo == SIGFPE || signo == SIGILL || signo == SIGTRAP;
}

}  // namespace

int real_sigaction(int signo, const struct sigaction* action, struct sigaction* old) {
  return __sigaction(signo, action, old);
}

int front_install(int signo, SignalHandler ours, FrontKind kind, int shared_flags) {
  if (!valid(signo) || signo == SIGKILL || signo == SIGSTOP) return EINVAL;
  Front& front = g_fronts[signo];
  if (front.managed.load(std::memory_order_acquire)) return 0;
  struct sigaction current{};
  if (real_sigaction(signo, nullptr, &current) != 0) return errno;
  front.ours = ours;
  front.kind = kind;
  front.shared_flags = shared_flags;
  record_program_action(signo, current);
  if (install_in_kernel(signo, current) != 0) return errno;
  front.managed.store(true, std::memory_order_release);
  return 0;
}

bool front_managed(int signo) {
  return valid(signo) && g_fronts[signo].managed.load(std::memory_order_acquire);
}

bool front_program_has_handler(int signo) { return valid(signo) && is_handler(program_action(signo)); }

int front_sigaction(int signo, const struct sigaction* action, struct sigaction* old) {
  if (!front_managed(signo)) return real_sigaction(signo, action, old);
  if (old != nullptr) *old = program_action(signo);
  if (action == nullptr) return 0;
  struct sigaction program = *action;
  // As the kernel does (sigaction(2)): SIGKILL and SIGSTOP cannot be blocked.
  sigdelset(&program.sa_mask, SIGKILL);
  sigdelset(&program.sa_mask, SIGSTOP);
  if (g_fronts[signo].kind == FrontKind::carried) {
    if (int result = install_in_kernel(signo, program); result != 0) return result;
  }
  record_program_action(signo, program);
  return 0;
}

void set_default_action_hook(DefaultActionHook hook) { g_default_hook.store(hook, std::memory_order_release); }

void front_dispatch(int signo, siginfo_t* info, void* context) {
  if (!valid(signo)) return;
  Front& front = g_fronts[signo];
  const struct sigaction program = program_action(signo);
  if (is_handler(program)) {
    if (program.sa_flags & SA_RESETHAND) {
      // One-shot: the next delivery meets the default action.
      struct sigaction reset{};
      reset.sa_handler = SIG_DFL;
      sigemptyset(&reset.sa_mask);
      if (front.kind == FrontKind::carried) install_in_kernel(signo, reset);
      record_program_action(signo, reset);
    }
    sigset_t saved;
    const bool apply_mask = front.kind == FrontKind::shared;
    if (apply_mask) {
      // The kernel ran our handler with the asynchronous signals blocked:
      // the program's handler gets the mask the kernel would have given
      // it, the interrupted mask plus its sa_mask and the signal itself
      // (sigaction(2)), set rather than added to.
      sigset_t mask;
      sigemptyset(&mask);
      if (context != nullptr)
        __builtin_memcpy(&mask, &static_cast<const ucontext_t*>(context)->uc_sigmask, sizeof(unsigned long));
      sigorset(&mask, &mask, &program.sa_mask);
      if (!(program.sa_flags & SA_NODEFER)) sigaddset(&mask, signo);
      base::raw_sigprocmask(SIG_SETMASK, &mask, &saved);
    }
    if (program.sa_flags & SA_SIGINFO)
      program.sa_sigaction(signo, info, context);
    else
      program.sa_handler(signo);
    if (apply_mask) base::raw_sigprocmask(SIG_SETMASK, &saved, nullptr);
    return;
  }
  if (is_ignore(program)) return;
  // The default action, as if libprofil had never been here.
  base::ErrnoSaver errno_saver;
  if (DefaultActionHook hook = g_default_hook.load(std::memory_order_acquire)) {
    // The profile is written on our stack: the program's alternate stack
    // may be a few KiB (handler_stack.h).
    struct HookCall {
      DefaultActionHook hook;
      int signo;
    } call{hook, signo};
    run_on_handler_stack([](void* opaque) {
      const auto* c = static_cast<const HookCall*>(opaque);
      c->hook(c->signo);
    }, &call);
  }
  struct sigaction default_action{};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  front.managed.store(false, std::memory_order_release);
  real_sigaction(signo, &default_action, nullptr);
  // A fault repeats when the handler returns and now meets the default
  // action (the core shows the faulting instruction). Anything else is
  // raised again: it stays pending while this handler runs with it blocked
  // and is delivered on return (at once where the handler has SA_NODEFER).
  if (!is_synchronous_fault(signo, info)) ::raise(signo);
}

void front_before_exec() {
  for (int signo = 1; signo < NSIG; ++signo) {
    g_ignored_for_exec[signo] = false;
    if (!front_managed(signo) || g_fronts[signo].kind != FrontKind::shared) continue;
    if (!is_ignore(program_action(signo))) continue;
    struct sigaction ignore{};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    if (real_sigaction(signo, &ignore, nullptr) == 0) g_ignored_for_exec[signo] = true;
  }
}

void front_step_aside() {
  for (int signo = 1; signo < NSIG; ++signo) {
    if (!front_managed(signo)) continue;
    const struct sigaction program = program_action(signo);
    g_fronts[signo].managed.store(false, std::memory_order_release);
    real_sigaction(signo, &program, nullptr);
  }
}

void front_after_failed_exec() {
  for (int signo = 1; signo < NSIG; ++signo) {
    if (!g_ignored_for_exec[signo]) continue;
    g_ignored_for_exec[signo] = false;
    install_in_kernel(signo, program_action(signo));
  }
}

}  // namespace profiling::sampler
