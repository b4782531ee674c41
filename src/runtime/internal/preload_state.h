// The preload runtime's shared state (preload.h), and the internal calls
// between its files: start-up (preload.cc), the run directory and its
// names (run_directory.cc), the dump and its checkpoints (preload_dump.cc),
// fork and exec (preload_fork_exec.cc), the exit interposers
// (preload_exit.cc). For those files only.
//
// Who writes it, and when:
// - start() (preload.cc), once, at load, before the program's own code
//   runs: everything below (the output directory's through keep_directory,
//   the image's ledger and name state through begin_image). g_active
//   becomes true once the table is mapped, and stays so; g_stacks,
//   g_max_depth, g_cpu_at_clocks and g_hz come last.
// - on_fork_child() (preload_fork_exec.cc), in the fork child, its only
//   thread, with SIGPROF blocked: the tables emptied, g_owner_pid,
//   g_dump_state, g_dumped_once, the sampling baselines
//   (mark_sampling_start), the image's ledger/name state (begin_image),
//   g_cpu_at_clocks.
// - preload_dump() (preload_dump.cc), by the one thread that won
//   g_dump_state (kIdle -> kWriting): g_dump_tid, g_dumped_once, g_name
//   and g_placeholder_empty (choose_name), g_end_in_ledger.
// - preload_after_failed_exec(): g_end_in_ledger, g_dump_state.
// Read from a signal handler (a crash or terminating signal's hook,
// on_process_end; the sampling handler's every-32-ticks hook, on_periodic;
// both reach preload_dump): all of it, through preload_dump,
// collect_unsampled, nothing_sampled, choose_name, record_in_ledger,
// output_directory/kept_directory_intact and report_write_error. Those are
// ASYNC-SIGNAL-SAFE: no allocation, no locks, no stdio, errno saved (by
// preload_dump, which they run under, and by choose_name itself). What
// several threads may touch at once is atomic (g_owner_pid, g_dump_state,
// g_dump_tid); the rest is written before sampling starts, by a fork
// child's only thread, or by the thread that holds g_dump_state at
// kWriting (and g_end_in_ledger by preload_after_failed_exec, as above).
//
// The variables are defined in internal/preload_state.cc.
#ifndef PROFIL_RUNTIME_INTERNAL_PRELOAD_STATE_H
#define PROFIL_RUNTIME_INTERNAL_PRELOAD_STATE_H

#include <limits.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "format/profraw.h"
#include "format/run_names.h"
#include "runtime/process_end.h"
#include "sampler/pc_table.h"
#include "sampler/sampler.h"
#include "unwind/stack_table.h"

namespace profiling::runtime::internal {

enum DumpState : int { kIdle = 0, kWriting = 1, kDone = 2 };

extern bool g_active;
extern sampler::PcTable* g_table;
// The whole stacks (PROFIL_STACKS=1; null when off; preload.cc says their
// size) and the unwinder's depth limit, read once at start.
extern unwind::StackTable* g_stacks;
extern uint32_t g_max_depth;
extern std::atomic<pid_t> g_owner_pid;
extern std::atomic<int> g_dump_state;
extern std::atomic<pid_t> g_dump_tid;
// A complete profile is in the directory (a provisional dump's, at least).
extern bool g_dumped_once;
// The placeholder choose_name created is still empty: the first dump is
// written into it rather than renamed over it (profraw_writer.h).
extern bool g_placeholder_empty;
extern char g_dir[PATH_MAX];
// The run's ledger (format/profraw.h, LedgerRecord): its name in the
// directory ("" without a run id), and whether this image recorded its
// start there. Then it names and writes a profraw only once it has a
// sample, and an image that ends with none records its end in the ledger
// instead: no file of its own.
extern char g_ledger[format::kLedgerNameSize];
extern bool g_in_ledger;
extern bool g_end_in_ledger;  // this image's end is recorded there
extern char g_name[256];
extern char g_run_id[format::profraw::kRunIdSize + 1];
extern uint32_t g_hz;
extern int64_t g_start_ns;
extern uint64_t g_signals_at_start;
extern uint64_t g_ticks_at_start;
extern int64_t g_cpu_at_start;  // CLOCK_PROCESS_CPUTIME_ID when sampling started
// ...and once the clocks ran: what lies between is libprofil's own start
// (the ledger's record, the stack table, the engine's probe and timers),
// which no clock can sample. It is neither the program's nor unsampled:
// left out of the "unknown" row (issue 20: under load it reached 4-5 ms of
// a short process, and every /bin/true of a shell loop got an "unknown"
// line).
extern int64_t g_cpu_at_clocks;

// The output directory, opened once at start and kept (above the
// descriptors programs count on), so that a rename of its path cannot
// redirect the dump; writes go through /proc/self/fd/N while that is still
// the same directory, else (the program closed or reused the descriptor)
// through the path.
extern int g_dirfd;
extern dev_t g_dir_dev;
extern ino_t g_dir_ino;
extern char g_dirfd_path[32];

// ASYNC-SIGNAL-SAFE helpers.
inline pid_t current_tid() { return static_cast<pid_t>(::syscall(SYS_gettid)); }

inline int64_t clock_ns(clockid_t clock) {
  timespec ts{};
  ::clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}
inline int64_t realtime_ns() { return clock_ns(CLOCK_REALTIME); }

inline uint32_t clock_code(sampler::ClockKind clock) {
  // profraw.h: 0 cpu, 1 perf (ring), 2 wall, 3 perf-signal.
  switch (clock) {
    case sampler::ClockKind::perf: return 1;
    case sampler::ClockKind::wall: return 2;
    case sampler::ClockKind::perf_signal: return 3;
    default: return 0;
  }
}

// run_directory.cc (each says there what it does).
void keep_directory();
void keep_program_name();  // start-up, before the program's code
const char* program_name();  // ASYNC-SIGNAL-SAFE
bool kept_directory_intact();  // ASYNC-SIGNAL-SAFE
const char* output_directory();  // ASYNC-SIGNAL-SAFE
const char* run_token();  // ASYNC-SIGNAL-SAFE
void choose_name();  // ASYNC-SIGNAL-SAFE
void report_write_error(int error);  // ASYNC-SIGNAL-SAFE
bool record_in_ledger(format::profraw::LedgerKind kind, format::profraw::EndReason reason,
                      int signo);  // ASYNC-SIGNAL-SAFE
void begin_image();

// preload_dump.cc.
void mark_sampling_start();
uint32_t collect_unsampled(format::profraw::Unsampled* records);  // ASYNC-SIGNAL-SAFE
void on_periodic();  // ASYNC-SIGNAL-SAFE
void on_process_end(ProcessEnd how, int signo);  // ASYNC-SIGNAL-SAFE

// preload_fork_exec.cc.
void on_fork_child();

// preload_exit.cc: the real _exit, _Exit, quick_exit and exit, looked up
// first thing at start.
void find_real_exits();

}  // namespace profiling::runtime::internal

#endif  // PROFIL_RUNTIME_INTERNAL_PRELOAD_STATE_H
