// The preload runtime across fork and exec: a fork child starts a profile
// of its own (on_fork_child, the pthread_atfork child handler); an exec
// first writes the old image's samples, then notes in the ledger a program
// the preload cannot enter, and takes the image back when the exec fails
// (preload_before_exec, preload_note_not_entered,
// preload_after_failed_exec: exec_hooks.cc calls them).
//
// ASYNC-SIGNAL-SAFE: on_fork_child runs in the child of a possibly
// multithreaded fork, preload_note_not_entered in a vfork child, the exec
// wrappers wherever the program calls exec. No allocation, no locks, no
// stdio, errno saved.
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#include "base/errno_saver.h"
#include "runtime/internal/preload_state.h"
#include "runtime/preload.h"
#include "runtime/profraw_writer.h"
#include "runtime/seccomp_filter.h"
#include "sampler/sampler.h"
#include "sampler/signal_front.h"

namespace profiling::runtime {
namespace internal {

void on_fork_child() {
  if (!g_active) return;
  // The child keeps only what it samples from now on. Its only thread
  // blocks the sampling signal while the table is emptied, so no add()
  // races the clear.
  // (The system call itself: libprofil's pthread_sigmask wrapper would open
  // the child's deferred perf rings at once, signal_mask_hooks.cc.)
  sigset_t profiling_signal, previous;
  sigemptyset(&profiling_signal);
  sigaddset(&profiling_signal, SIGPROF);
  ::syscall(SYS_rt_sigprocmask, SIG_BLOCK, &profiling_signal, &previous, sizeof(uint64_t));
  g_table->clear();
  if (g_stacks != nullptr) g_stacks->clear();
  g_owner_pid.store(::getpid(), std::memory_order_relaxed);
  g_dump_state.store(kIdle, std::memory_order_relaxed);
  g_dumped_once = false;
  mark_sampling_start();
  begin_image();
  g_cpu_at_clocks = clock_ns(CLOCK_PROCESS_CPUTIME_ID);  // the child's clock runs since the fork
  ::syscall(SYS_rt_sigprocmask, SIG_SETMASK, &previous, nullptr, sizeof(uint64_t));
}

}  // namespace internal

using namespace internal;
using format::profraw::EndReason;

void preload_before_exec() {
  if (!g_active) return;
  preload_dump(EndReason::exec, 0);
}

void preload_before_seccomp_filter(const struct sock_fprog* filter) {
  sampler::before_seccomp_filter();
  if (!g_active || ::getpid() != g_owner_pid.load(std::memory_order_relaxed)) return;
  if (seccomp_filter_allows_runtime(filter)) return;
  // The filter would refuse what the runtime still does: every timer
  // stopped and a pending sampling signal discarded (as before an exec),
  // the profile written now, the program's own signal actions given back
  // to the kernel, and nothing of ours runs in this process again.
  sampler::before_exec();
  preload_dump(EndReason::filtered, 0);
  sampler::front_step_aside();
  g_active = false;
}

void preload_note_not_entered(const char* program, format::profraw::NotEntered why) {
  // Also from a vfork child (dash execs its commands that way), under its
  // own pid: a record appended, nothing of ours changed.
  if (!g_active || g_ledger[0] == '\0') return;
  base::ErrnoSaver errno_saver;
  format::profraw::LedgerRecord record{};
  std::memcpy(record.magic, format::profraw::kLedgerMagic, sizeof record.magic);
  record.kind = static_cast<uint32_t>(format::profraw::LedgerKind::not_entered);
  record.end_reason = static_cast<uint32_t>(why);
  record.pid = ::getpid();
  record.ppid = ::getppid();
  record.start_ns = g_start_ns;
  const char* base = program;
  for (const char* p = program; *p != '\0'; ++p)
    if (*p == '/') base = p + 1;
  for (size_t i = 0; base[i] != '\0' && i + 1 < sizeof record.name; ++i) record.name[i] = base[i];
  append_ledger_record(output_directory(), g_ledger, record);
}

void preload_after_failed_exec() {
  if (!g_active || ::getpid() != g_owner_pid.load(std::memory_order_relaxed)) return;
  // Still this image: its final dump rewrites the file with everything
  // (or records its end again: the ledger's last record of an image counts).
  g_end_in_ledger = false;
  g_dump_state.store(kIdle, std::memory_order_release);
}

}  // namespace profiling::runtime
