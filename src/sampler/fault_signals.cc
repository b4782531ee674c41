// SIGSEGV and SIGBUS open for profil's fault-safe loads (fault_signals.h).
//
// ASYNC-SIGNAL-SAFE: all of it (thread-local loads and stores, raw system
// calls: rt_sigprocmask, rt_tgsigqueueinfo, getpid, gettid).
#include "sampler/fault_signals.h"

#include <sys/syscall.h>
#include <unistd.h>

#include "base/signal_mask.h"

namespace profiling::sampler {
namespace {

constexpr int kFaultSignals[] = {SIGSEGV, SIGBUS};

// Scopes open in this thread; of them, how many unblocked each fault
// signal (a handler can open one while another is being closed); a sent
// signal held meanwhile, each with its siginfo.
__thread unsigned t_depth __attribute__((tls_model("initial-exec")));
__thread unsigned t_opened[2] __attribute__((tls_model("initial-exec")));
__thread bool t_held[2] __attribute__((tls_model("initial-exec")));
__thread siginfo_t t_held_info[2] __attribute__((tls_model("initial-exec")));

int index_of(int signo) { return signo == SIGSEGV ? 0 : signo == SIGBUS ? 1 : -1; }

}  // namespace

FaultSignalsOpen::FaultSignalsOpen(const sigset_t* mask) {
  ++t_depth;
  sigset_t current;
  if (mask == nullptr) {
    // Inside another scope (a drain in a handler): already open.
    if (t_depth > 1 || base::raw_sigprocmask(SIG_BLOCK, nullptr, &current) != 0) return;
    mask = &current;
  }
  sigset_t open;
  sigemptyset(&open);
  bool any = false;
  for (int i = 0; i < 2; ++i) {
    if (sigismember(mask, kFaultSignals[i]) != 1) continue;
    sigaddset(&open, kFaultSignals[i]);
    any = true;
  }
  if (!any) return;
  // Counted before the unblock: a pending sent one arrives at once.
  for (int i = 0; i < 2; ++i)
    if (sigismember(&open, kFaultSignals[i]) == 1) {
      opened_[i] = true;
      ++t_opened[i];
    }
  if (base::raw_sigprocmask(SIG_UNBLOCK, &open, nullptr) != 0) {
    for (int i = 0; i < 2; ++i)
      if (opened_[i]) --t_opened[i];
    opened_[0] = opened_[1] = false;
  }
}

FaultSignalsOpen::~FaultSignalsOpen() {
  if (opened_[0] || opened_[1]) {
    sigset_t close;
    sigemptyset(&close);
    for (int i = 0; i < 2; ++i)
      if (opened_[i]) sigaddset(&close, kFaultSignals[i]);
    // Blocked first, then sent: the signal stays pending, as it would have.
    base::raw_sigprocmask(SIG_BLOCK, &close, nullptr);
    for (int i = 0; i < 2; ++i) {
      if (!opened_[i] || --t_opened[i] != 0 || !t_held[i]) continue;
      t_held[i] = false;
      siginfo_t info = t_held_info[i];
      ::syscall(SYS_rt_tgsigqueueinfo, ::getpid(), static_cast<pid_t>(::syscall(SYS_gettid)), kFaultSignals[i],
                &info);
    }
  }
  --t_depth;
}

bool hold_sent_fault_signal(int signo, const siginfo_t* info) {
  const int i = index_of(signo);
  // si_code > 0 is the kernel's own: a fault, which cannot wait.
  if (i < 0 || t_opened[i] == 0 || info == nullptr || info->si_code > 0) return false;
  if (!t_held[i]) {
    t_held_info[i] = *info;
    t_held[i] = true;
  }
  return true;
}

}  // namespace profiling::sampler
