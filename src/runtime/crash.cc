// Terminating and crash signals (process_end.h: install_crash_handlers),
// with sigaction() and signal() interposed so a program's own handlers do
// not take our place.
//
// Handlers are installed only for signals whose disposition is still the
// default when profiling starts: an ignored SIGHUP (nohup) stays ignored.
// A program that installs its own handler later keeps it: if its handler
// returns, nothing else happens, exactly as without profiling; if it ends
// the process with exit() or _exit(), the profile is written that way.
//
// The rule (sigaction(2), signal(7)): what the program asked for is what
// happens. Every signal libprofil sits in front of — SIGPROF, SIGSEGV and
// SIGBUS for the sampler, the terminating signals here — is kept in
// sampler/signal_front.h's table, which runs the program's handler, ignores
// the signal, or writes the profile, restores the default and raises the
// signal again, so the process ends as it would have.
#include "runtime/process_end.h"

#include <signal.h>

#include "runtime/export.h"
#include "sampler/sampler.h"
#include "sampler/signal_front.h"

namespace profiling::runtime {
namespace {

// Every signal whose default action ends the process (signal(7)), but
// SIGKILL and SIGSTOP-likes: a pipeline's writer dies of SIGPIPE, a
// `timeout` sends SIGTERM, a CPU limit SIGXCPU — each keeps its profile.
constexpr int kTerminating[] = {SIGTERM, SIGINT,  SIGHUP,  SIGQUIT, SIGFPE,  SIGILL,    SIGABRT, SIGTRAP,
                                SIGSYS,  SIGPIPE, SIGALRM, SIGUSR1, SIGUSR2, SIGVTALRM, SIGXCPU, SIGXFSZ};

// ASYNC-SIGNAL-SAFE. The kernel ran this with the program's own mask and
// flags: all that is left is to do what the program asked.
void on_terminating_signal(int signo, siginfo_t* info, void* context) {
  sampler::front_dispatch(signo, info, context);
}

// ASYNC-SIGNAL-SAFE. The default action of any signal in front is about to
// end the process.
void on_default_action(int signo) { run_process_end_hooks(ProcessEnd::signal, signo); }

}  // namespace

void install_crash_handlers() {
  sampler::set_default_action_hook(on_default_action);
  sampler::install_fault_guard();  // SIGSEGV, SIGBUS
  for (int signo : kTerminating) {
    struct sigaction current{};
    if (sampler::real_sigaction(signo, nullptr, &current) != 0) continue;
    // Ignored (nohup) or handled by whoever exec'd us: not ours to watch.
    if ((current.sa_flags & SA_SIGINFO) || current.sa_handler != SIG_DFL) continue;
    sampler::front_install(signo, on_terminating_signal, sampler::FrontKind::carried);
  }
}

}  // namespace profiling::runtime

extern "C" {

PROFIL_EXPORT int sigaction(int signo, const struct sigaction* action, struct sigaction* old) __THROW {
  return profiling::sampler::front_sigaction(signo, action, old);
}

// signal() has BSD semantics in glibc (signal(2)): SA_RESTART, no reset.
static sighandler_t interposed_signal(int signo, sighandler_t handler) {
  struct sigaction action{};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  if (signo > 0 && signo < NSIG) sigaddset(&action.sa_mask, signo);
  action.sa_flags = SA_RESTART;
  struct sigaction old{};
  if (profiling::sampler::front_sigaction(signo, &action, &old) != 0) return SIG_ERR;
  return old.sa_handler;
}

PROFIL_EXPORT sighandler_t signal(int signo, sighandler_t handler) __THROW {
  return interposed_signal(signo, handler);
}

PROFIL_EXPORT sighandler_t bsd_signal(int signo, sighandler_t handler) __THROW {
  return interposed_signal(signo, handler);
}

}  // extern "C"
