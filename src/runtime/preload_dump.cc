// The dump: the profile of this image written into the run directory
// (preload_dump, preload.h), once for good at the process's end, or
// provisionally (exit() while other threads run) and as checkpoints while
// it runs (on_periodic, also at the tool's request: snapshot_request.h),
// each replaced by the next; and the accounting it writes with the
// samples: the baselines sampling counts from (mark_sampling_start) and the
// CPU time no sample caught (collect_unsampled).
//
// ASYNC-SIGNAL-SAFE, the whole file: the dump runs from the sampling
// handler (checkpoints), from crash and terminating signals' hooks
// (on_process_end) and at exit. No allocation, no locks, no stdio, errno
// saved.
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>

#include "base/errno_saver.h"
#include "base/file_limit.h"
#include "base/signal_mask.h"
#include "format/profile.h"
#include "runtime/internal/preload_state.h"
#include "runtime/preload.h"
#include "runtime/process_end.h"
#include "runtime/profraw_writer.h"
#include "runtime/python_inside.h"
#include "runtime/ruby_inside.h"
#include "runtime/snapshot_request.h"
#include "sampler/sampler.h"
#include "unwind/stack_table.h"

namespace profiling::runtime {
namespace internal {

using format::profraw::EndReason;

// Sampling (re)starts counting here: the baselines the dump's accounting
// measures from.
void mark_sampling_start() {
  g_start_ns = realtime_ns();
  g_signals_at_start = sampler::stats().signals;
  g_ticks_at_start = sampler::stats().ticks;
  g_cpu_at_start = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
}

// ASYNC-SIGNAL-SAFE. The CPU time no sample caught, as the dump's records:
// the sampler's per-thread gaps by cause, plus what the process's CPU clock
// ran beyond every thread's samples and gaps (threads no clock measured:
// one made by a raw clone, one whose clock could not be created) as
// "unknown", under the same noise rule. Returns the number of records.
uint32_t collect_unsampled(format::profraw::Unsampled* records) {
  using format::profraw::UnsampledCause;
  static_assert(static_cast<uint32_t>(UnsampledCause::signals_blocked) ==
                    static_cast<uint32_t>(sampler::UnsampledCause::signals_blocked) &&
                static_cast<uint32_t>(UnsampledCause::descriptor_closed) ==
                    static_cast<uint32_t>(sampler::UnsampledCause::descriptor_closed) &&
                static_cast<uint32_t>(UnsampledCause::unknown) == static_cast<uint32_t>(sampler::UnsampledCause::unknown) &&
                static_cast<uint32_t>(UnsampledCause::between_ticks) ==
                    static_cast<uint32_t>(sampler::UnsampledCause::between_ticks) &&
                static_cast<uint32_t>(UnsampledCause::ring_full) ==
                    static_cast<uint32_t>(sampler::UnsampledCause::ring_full) &&
                static_cast<uint32_t>(UnsampledCause::in_kernel) ==
                    static_cast<uint32_t>(sampler::UnsampledCause::in_kernel) &&
                sampler::kUnsampledCauses == 6 && sampler::kUnsampledTids == 8);
  const sampler::ClockKind clock = sampler::active_clock();
  if (g_hz == 0 || clock == sampler::ClockKind::wall) return 0;
  sampler::Unsampled measured;
  sampler::unsampled_time(&measured);
  const uint64_t period = 1'000'000'000ull / g_hz;
  const int64_t process_ns = clock_ns(CLOCK_PROCESS_CPUTIME_ID) - g_cpu_at_start;
  uint64_t explained = (sampler::stats().ticks - g_ticks_at_start) * period + measured.noise_ns;
  if (g_cpu_at_clocks > g_cpu_at_start) explained += static_cast<uint64_t>(g_cpu_at_clocks - g_cpu_at_start);
  for (const sampler::UnsampledRow& row : measured.rows) explained += row.cpu_ns;
  if (process_ns > 0 && static_cast<uint64_t>(process_ns) > explained) {
    const uint64_t rest = static_cast<uint64_t>(process_ns) - explained;
    if (sampler::unsampled_beyond_noise(rest, static_cast<uint64_t>(process_ns), period))
      measured.rows[static_cast<size_t>(UnsampledCause::unknown) - 1].cpu_ns += rest;
  }
  uint32_t n = 0;
  for (size_t i = 0; i < sampler::kUnsampledCauses; ++i) {
    const sampler::UnsampledRow& row = measured.rows[i];
    if (row.cpu_ns == 0) continue;
    // A cause found is worth its row however small; "unknown" only beyond
    // the noise of the whole process. (Seen: xz's main thread, which runs
    // in short bursts between its worker's, had 6 ms of CPU and no tick of
    // its CPU-time timer, which the kernel checks only at a tick that finds
    // the thread running; 6 ms of a 2 s process is noise.)
    if (i + 1 == static_cast<size_t>(UnsampledCause::unknown) && process_ns > 0 &&
        !sampler::unsampled_beyond_noise(row.cpu_ns, static_cast<uint64_t>(process_ns), period))
      continue;
    format::profraw::Unsampled& record = records[n++];
    record = format::profraw::Unsampled{};
    record.cause = static_cast<uint32_t>(i + 1);
    record.threads = row.threads;
    record.cpu_ns = row.cpu_ns;
    for (size_t k = 0; k < sampler::kUnsampledTids; ++k) record.tids[k] = row.tids[k];
  }
  return n;
}

}  // namespace internal

using namespace internal;

namespace {
// ASYNC-SIGNAL-SAFE. The dump this thread was writing is over: a final one
// for good, any other leaves the next to come.
void end_dump(DumpKind kind) {
  g_dump_tid.store(0, std::memory_order_relaxed);
  g_dump_state.store(kind == DumpKind::final ? kDone : kIdle, std::memory_order_release);
}

// ASYNC-SIGNAL-SAFE. The image has nothing a profile would show.
bool nothing_sampled(uint32_t unsampled_count) {
  return unsampled_count == 0 && g_table->used() == 0 && g_table->dropped() == 0 &&
         (g_stacks == nullptr || (g_stacks->frames_used() == 0 && g_stacks->dropped_weight() == 0));
}

// The unwinder's stack table as the writer reads it (profraw_writer.h).
// ASYNC-SIGNAL-SAFE: for_each walks the table's fixed memory.
class TableStacks final : public StackSource {
 public:
  explicit TableStacks(const unwind::StackTable* table) : table_(table) {}
  void for_each_stack(StackVisitor& outer) const override {
    // A CPython process's Python frames named and merged (python_inside.h).
    PythonMerge python(outer);
    RubyMerge ruby(outer);  // a Ruby process's (ruby_inside.h)
    StackVisitor& visitor = python_frames_on() ? static_cast<StackVisitor&>(python)
                            : ruby_frames_on() ? static_cast<StackVisitor&>(ruby)
                                               : outer;
    table_->for_each([&visitor](const uint64_t* pcs, uint32_t depth, bool truncated, uint64_t weight, int32_t tid,
                                uint32_t observations) {
      visitor.visit(pcs, depth, truncated, weight, tid, observations, format::kGilUnknown);
    });
  }
  uint64_t dropped_stacks() const override { return table_->dropped_weight(); }

 private:
  const unwind::StackTable* table_;
};
}  // namespace

bool preload_dump(EndReason reason, int signo, DumpKind kind) {
  if (!g_active) return false;
  base::ErrnoSaver errno_saver;
  // No handler of the program's may run inside the dump and jump out of it
  // (issue 20: a SIGALRM handler's siglongjmp left the state "writing" and
  // the final dump gave up): the exit-time dumps run in the program's
  // context; in our handlers this changes nothing.
  base::AsyncSignalsBlocked blocked;
  // A vfork child shares our memory under another pid: it must neither
  // write our samples under its name nor use up our one dump.
  if (::getpid() != g_owner_pid.load(std::memory_order_relaxed)) return false;
  for (;;) {
    int expected = kIdle;
    if (g_dump_state.compare_exchange_strong(expected, kWriting, std::memory_order_acq_rel)) break;
    if (expected == kDone) return true;
    // A checkpoint never waits: another dump is being written, or is done.
    if (kind == DumpKind::checkpoint) return false;
    // Another thread is writing (say, one crashed while another exits):
    // wait for it, so the process does not end under it. A crash inside the
    // writer itself must not wait for itself.
    if (g_dump_tid.load(std::memory_order_relaxed) == current_tid()) return false;
    for (int i = 0; i < 5000 && g_dump_state.load(std::memory_order_acquire) == kWriting; ++i) {
      timespec ms{0, 1'000'000};
      ::nanosleep(&ms, nullptr);
    }
    const int now = g_dump_state.load(std::memory_order_acquire);
    if (now == kWriting) return false;  // the writer is stuck: give up rather than hang the exit
    if (now == kDone || kind == DumpKind::provisional) return now == kDone || g_dumped_once;
    // A provisional dump or a checkpoint finished: this final one writes
    // everything again.
  }
  g_dump_tid.store(current_tid(), std::memory_order_relaxed);
  ProfrawInfo info;
  // The clock now: a program that closed the perf counters' descriptors
  // moved the process to CPU-time timers (descriptor_hooks.cc).
  info.clock = clock_code(sampler::active_clock());
  info.start_clock = clock_code(sampler::clock_at_start());
  format::profraw::Unsampled unsampled[sampler::kUnsampledCauses];
  info.unsampled_count = collect_unsampled(unsampled);
  if (g_in_ledger && g_name[0] == '\0' && nothing_sampled(info.unsampled_count)) {
    // No sample yet, no file yet: the end goes to the ledger (a checkpoint
    // has nothing to keep).
    bool recorded = kind == DumpKind::checkpoint || g_end_in_ledger;
    if (!recorded) recorded = g_end_in_ledger = record_in_ledger(format::profraw::LedgerKind::end, reason, signo);
    if (recorded) {
      if (kind != DumpKind::checkpoint) g_dumped_once = true;
      end_dump(kind);
      return kind != DumpKind::checkpoint;
    }
    // The ledger is gone (the program removed the directory, or dropped
    // the privileges to write there): a file then, which says why it
    // cannot be written.
  }
  if (g_name[0] == '\0') choose_name();
  info.unsampled = unsampled;
  info.hz = g_hz;
  info.start_ns = g_start_ns;
  info.end_reason = reason;
  info.signal = static_cast<uint32_t>(signo);
  info.signals = sampler::stats().signals - g_signals_at_start;
  info.run_id = g_run_id;
  TableStacks stacks(g_stacks);
  if (g_stacks != nullptr) {
    info.stacks = &stacks;
    info.max_depth = g_max_depth;
    if (python_frames_on()) info.interpreter_frames = &python_frame_names();
    if (ruby_frames_on()) info.interpreter_frames = &ruby_frame_names();
  }
  bool ok = write_profraw(output_directory(), g_name, info, *g_table, g_placeholder_empty);
  if (!ok && errno == EMFILE) {
    // The program is at its descriptor limit (issue 20: its final profile
    // was lost): the limit is raised for the dump alone, then put back.
    base::RaisedFileLimit raised(16);  // the directory, the file, the maps, and ours above the limit
    if (raised.raised()) ok = write_profraw(output_directory(), g_name, info, *g_table, g_placeholder_empty);
  }
  g_placeholder_empty = false;  // written, or left unfinished: a later dump renames over it
  if (ok) g_dumped_once = true;
  // A checkpoint that cannot be written says nothing: the final dump will
  // try again and say why once (a program that dropped its privileges
  // would otherwise print the line at every checkpoint).
  if (!ok && kind != DumpKind::checkpoint) {
    const int error = errno;
    report_write_error(error);
    // And to profil run, which would otherwise count a process that left
    // nothing as killed or ended by a raw exit_group (issue 32). The
    // ledger is a file already there: it takes a record where a full disk
    // refuses a new file.
    if (g_in_ledger) record_in_ledger(format::profraw::LedgerKind::unwritten, reason, error);
    errno = error;
  }
  end_dump(kind);
  return ok;
}

namespace internal {
namespace {

// Checkpoints. A process can end with no way for us to write: a raw
// exit_group system call (every Go program ends so, cgo or not), SIGKILL.
// So a running process writes its dump now and then, as a checkpoint that
// its final dump replaces: the profile of such a process stops at its last
// checkpoint instead of being lost. Every max(50 ms, 1/32 of the CPU time
// so far) of process CPU time — about 3 % of a long process's time is at
// risk, and a long run writes a few dumps a minute at most — checked from
// the sampling handler every 32 ticks of a thread (sampler.h).
constexpr int64_t kFirstCheckpointNs = 50'000'000;
std::atomic<int64_t> g_next_checkpoint_ns{kFirstCheckpointNs};

}  // namespace

// ASYNC-SIGNAL-SAFE.
void on_periodic() {
  if (!g_active) return;
  // profil run --inside --every: the tool asks for a dump now.
  if (snapshot_requested()) {
    preload_dump(EndReason::checkpoint, 0, DumpKind::checkpoint);
    return;
  }
  if (snapshot_requests_on()) return;
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  const int64_t cpu = static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
  int64_t due = g_next_checkpoint_ns.load(std::memory_order_relaxed);
  if (cpu < due) return;
  const int64_t next = cpu + std::max<int64_t>(kFirstCheckpointNs, cpu / 32);
  if (!g_next_checkpoint_ns.compare_exchange_strong(due, next, std::memory_order_relaxed)) return;
  preload_dump(EndReason::checkpoint, 0, DumpKind::checkpoint);
}

// ASYNC-SIGNAL-SAFE: _exit/_Exit/quick_exit or a signal's default action.
void on_process_end(ProcessEnd how, int signo) {
  preload_dump(how == ProcessEnd::signal ? EndReason::signal : EndReason::quick, signo);
}

}  // namespace internal
}  // namespace profiling::runtime
