// The sampling signal in the program's signal mask (program_mask.h).
//
// ASYNC-SIGNAL-SAFE: all of it (thread-local loads and stores, raw system
// calls: rt_sigprocmask, rt_tgsigqueueinfo, getpid, gettid).
#include "sampler/program_mask.h"

#include <sys/syscall.h>
#include <unistd.h>

#include "base/signal_mask.h"
#include "sampler/signal_front.h"
#include "sampler/thread_slots.h"

namespace profiling::sampler {
namespace {

__thread bool t_blocks __attribute__((tls_model("initial-exec")));
__thread bool t_held __attribute__((tls_model("initial-exec")));
__thread siginfo_t t_held_info __attribute__((tls_model("initial-exec")));

}  // namespace

bool program_mask_kept_apart() { return front_managed(kSamplingSignal); }

bool program_blocks_sampling_signal() { return t_blocks; }

void set_program_blocks_sampling_signal(bool blocked) {
  const bool was = t_blocks;
  t_blocks = blocked;
  if (was && !blocked && t_held) {
    t_held = false;
    siginfo_t info = t_held_info;
    // To this thread, as the kernel would have delivered it on unblocking
    // (to self, any si_code is allowed: rt_sigqueueinfo(2)).
    ::syscall(SYS_rt_tgsigqueueinfo, ::getpid(), current_tid(), kSamplingSignal, &info);
  }
}

bool program_sampling_signal_held() { return t_held; }

void dispatch_program_sampling_signal(int signo, siginfo_t* info, void* context) {
  if (t_blocks) {
    // SIGPROF does not queue: one held stands for any number.
    if (!t_held) {
      t_held_info = *info;
      t_held = true;
    }
    return;
  }
  front_dispatch(signo, info, context);
}

void set_kernel_blocks_sampling_signal(bool blocked) {
  sigset_t sampling;
  sigemptyset(&sampling);
  sigaddset(&sampling, kSamplingSignal);
  base::raw_sigprocmask(blocked ? SIG_BLOCK : SIG_UNBLOCK, &sampling, nullptr);
}


}  // namespace profiling::sampler
