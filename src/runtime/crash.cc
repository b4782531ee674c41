// Terminating and crash signals (crash.h), with sigaction() and signal()
// interposed so a program's own handlers do not take our place.
//
// The rule the emulation keeps (sigaction(2), signal(7)): what the program
// asked for is what happens. Our handler is installed in the kernel with the
// program's mask and flags; it calls the program's handler, or — when the
// program left the default — writes the profile, restores the default and
// raises the signal again, so the process ends as it would have. SIG_IGN is
// passed straight to the kernel: an ignored signal must not interrupt
// system calls.
#include "runtime/crash.h"

#include <dlfcn.h>
#include <signal.h>

#include <cerrno>
#include <cstring>

#include "base/errno_saver.h"
#include "runtime/export.h"
#include "runtime/preload.h"

namespace profiling::runtime {
namespace {

using sigaction_fn = int (*)(int, const struct sigaction*, struct sigaction*);

constexpr int kManaged[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGFPE,
                            SIGILL,  SIGABRT, SIGTRAP, SIGSYS};

sigaction_fn g_real_sigaction = nullptr;
// Per signal: do we sit in front of it, and what the program asked for.
bool g_managed[NSIG] = {};
struct sigaction g_program_action[NSIG];

sigaction_fn real_sigaction() {
  // Resolved at start; a call before that (another library's constructor)
  // resolves it here — not from a signal handler, as nothing is managed yet.
  if (g_real_sigaction == nullptr)
    g_real_sigaction = reinterpret_cast<sigaction_fn>(::dlsym(RTLD_NEXT, "sigaction"));
  return g_real_sigaction;
}

bool is_default(const struct sigaction& action) {
  return !(action.sa_flags & SA_SIGINFO) && action.sa_handler == SIG_DFL;
}

bool is_ignore(const struct sigaction& action) {
  return !(action.sa_flags & SA_SIGINFO) && action.sa_handler == SIG_IGN;
}

void on_signal(int signo, siginfo_t* info, void* context);

// Puts our handler in the kernel for signo, carrying the program's mask and
// flags (SA_RESTART, SA_NODEFER, SA_ONSTACK... as it asked).
int install_front(int signo, const struct sigaction& program) {
  struct sigaction ours{};
  ours.sa_sigaction = on_signal;
  ours.sa_mask = program.sa_mask;
  ours.sa_flags = (program.sa_flags & ~SA_RESETHAND) | SA_SIGINFO;
  if (is_default(program)) {
    ours.sa_flags |= SA_ONSTACK;
    sigfillset(&ours.sa_mask);  // the dump is not interrupted by other signals
  }
  return real_sigaction()(signo, &ours, nullptr);
}

// ASYNC-SIGNAL-SAFE.
void on_signal(int signo, siginfo_t* info, void* context) {
  const struct sigaction program = g_program_action[signo];
  if (program.sa_flags & SA_SIGINFO) {
    if (program.sa_flags & SA_RESETHAND) {
      // One-shot: the next delivery meets the default (and our dump).
      struct sigaction reset{};
      reset.sa_handler = SIG_DFL;
      g_program_action[signo] = reset;
      install_front(signo, reset);
    }
    program.sa_sigaction(signo, info, context);
    return;
  }
  if (program.sa_handler != SIG_DFL && program.sa_handler != SIG_IGN) {
    if (program.sa_flags & SA_RESETHAND) {
      struct sigaction reset{};
      reset.sa_handler = SIG_DFL;
      g_program_action[signo] = reset;
      install_front(signo, reset);
    }
    program.sa_handler(signo);
    return;
  }
  base::ErrnoSaver errno_saver;
  preload_dump(format::profraw::EndReason::signal, signo);
  // The default action, as if we had never been here: signo is blocked while
  // this handler runs, so the raised copy stays pending and is delivered
  // when it returns (for a synchronous fault, the instruction faults again).
  struct sigaction default_action{};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  real_sigaction()(signo, &default_action, nullptr);
  g_managed[signo] = false;
  ::raise(signo);
}

}  // namespace

void prepare_signal_interposition() { real_sigaction(); }

void install_crash_handlers() {
  for (int signo : kManaged) {
    struct sigaction current{};
    if (real_sigaction()(signo, nullptr, &current) != 0) continue;
    if (!is_default(current)) continue;  // ignored (nohup) or already handled: leave it
    g_program_action[signo] = current;
    if (install_front(signo, current) == 0) g_managed[signo] = true;
  }
}

// The interposed entry points. Not managed (SIGPROF, SIGSEGV, the program's
// own signals, or profiling off): straight through.
int interposed_sigaction(int signo, const struct sigaction* action, struct sigaction* old) {
  if (signo <= 0 || signo >= NSIG || !g_managed[signo]) return real_sigaction()(signo, action, old);
  if (old != nullptr) *old = g_program_action[signo];
  if (action == nullptr) return 0;
  if (is_ignore(*action)) {
    if (int result = real_sigaction()(signo, action, nullptr); result != 0) return result;
    g_program_action[signo] = *action;
    return 0;
  }
  struct sigaction program = *action;
  if (int result = install_front(signo, program); result != 0) return result;
  g_program_action[signo] = program;
  return 0;
}

}  // namespace profiling::runtime

extern "C" {

PROFIL_EXPORT int sigaction(int signo, const struct sigaction* action, struct sigaction* old) __THROW {
  return profiling::runtime::interposed_sigaction(signo, action, old);
}

// signal() has BSD semantics in glibc (signal(2)): SA_RESTART, no reset.
static sighandler_t interposed_signal(int signo, sighandler_t handler) {
  struct sigaction action{};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  if (signo > 0 && signo < NSIG) sigaddset(&action.sa_mask, signo);
  action.sa_flags = SA_RESTART;
  struct sigaction old{};
  if (profiling::runtime::interposed_sigaction(signo, &action, &old) != 0) return SIG_ERR;
  return old.sa_handler;
}

PROFIL_EXPORT sighandler_t signal(int signo, sighandler_t handler) __THROW {
  return interposed_signal(signo, handler);
}

PROFIL_EXPORT sighandler_t bsd_signal(int signo, sighandler_t handler) __THROW {
  return interposed_signal(signo, handler);
}

}  // extern "C"
