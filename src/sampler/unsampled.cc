// The accounting of unsampled CPU time (unsampled.h; sampler.h, "CPU time
// no sample caught").
//
// ASYNC-SIGNAL-SAFE: unsampled_time, unsampled_beyond_noise, measure_gap
// and what they call (the running engine's gap_cause and account_process,
// read_clock_ns, atomics). account_released and reset_accounting run under
// the sampler's control lock.
#include "sampler/unsampled.h"

#include <atomic>

#include "sampler/engine.h"
#include "sampler/running_engine.h"
#include "sampler/sampler.h"

namespace profiling::sampler {
namespace {

using internal::g_clock_ticks;
using internal::g_clocks;
using internal::kMaxThreads;

// The gaps of threads whose clocks were released (the thread ended, or
// sampling restarted), by cause. Written under the control lock, read by
// the dump from any context.
struct EndedRow {
  std::atomic<uint64_t> cpu_ns{0};
  std::atomic<uint32_t> threads{0};
  std::atomic<int32_t> tids[kUnsampledTids];
};
EndedRow g_ended[kUnsampledCauses];
std::atomic<uint64_t> g_ended_noise_ns{0};

void add_to_row(UnsampledRow& row, pid_t tid, uint64_t gap) {
  row.cpu_ns += gap;
  if (row.threads < kUnsampledTids) row.tids[row.threads] = tid;
  ++row.threads;
}

void add_to_ended(uint32_t cause, pid_t tid, uint64_t gap) {
  EndedRow& row = g_ended[cause - 1];
  const uint32_t n = row.threads.load(std::memory_order_relaxed);
  if (n < kUnsampledTids) row.tids[n].store(tid, std::memory_order_relaxed);
  row.cpu_ns.fetch_add(gap, std::memory_order_relaxed);
  row.threads.store(n + 1, std::memory_order_release);
}

// ASYNC-SIGNAL-SAFE. The gap of clock c (index in g_clocks) now: false
// when its thread's clock cannot be read; *cause 0 when within the noise.
// *lost: the part of the gap the engine lost (the perf ring's ring_full).
bool measure_gap(const ThreadClock& c, size_t index, bool self, uint64_t* gap, uint32_t* cause, uint64_t* lost) {
  const int64_t now = read_clock_ns(self ? CLOCK_THREAD_CPUTIME_ID : thread_cpu_clock(c.tid));
  if (now < 0) return false;
  const uint64_t cpu = static_cast<uint64_t>(now) > c.cpu_at_attach_ns ? static_cast<uint64_t>(now) - c.cpu_at_attach_ns : 0;
  const uint64_t period = running_period_ns();
  const uint64_t sampled = g_clock_ticks[index].load(std::memory_order_relaxed) * period;
  *gap = cpu > sampled ? cpu - sampled : 0;
  *cause = 0;
  *lost = 0;
  {
    // What the engine dropped is a cause of its own, however small (only
    // the perf ring loses records, PERF_RECORD_LOST; zero elsewhere).
    const uint64_t dropped = internal::g_clock_lost[index].load(std::memory_order_relaxed) * period;
    *lost = dropped < *gap ? dropped : *gap;
    *gap -= *lost;
  }
  // On the ring each CPU's event of a thread keeps its own remainder, up
  // to a period each: the noise grows with the CPUs.
  if (!unsampled_beyond_noise(*gap, cpu, period * running_engine().noise_periods())) return true;
  *cause = static_cast<uint32_t>(running_engine().gap_cause(c, self));
  return true;
}

}  // namespace

void account_released(const ThreadClock& c) {
  if (!running_engine().accounted()) return;  // wall samples sleep too
  if (c.ignored) return;  // a watcher of ours: never sampled on purpose
  uint64_t gap = 0, lost = 0;
  uint32_t cause = 0;
  if (!measure_gap(c, slot_index(c), c.tid == current_tid(), &gap, &cause, &lost)) return;
  const ThreadGapParts parts = split_thread_gap(lost, cause, gap);
  for (unsigned i = 0; i < parts.rows; ++i) add_to_ended(parts.cause[i], c.tid, parts.cpu_ns[i]);
  if (parts.noise_ns != 0) g_ended_noise_ns.fetch_add(parts.noise_ns, std::memory_order_relaxed);
}

ThreadGapParts split_thread_gap(uint64_t lost_ns, uint32_t cause, uint64_t gap_ns) {
  constexpr auto kRingFull = static_cast<uint32_t>(UnsampledCause::ring_full);
  ThreadGapParts parts;
  if (cause == 0) parts.noise_ns = gap_ns;
  if (lost_ns != 0 || cause == kRingFull) {
    parts.cause[parts.rows] = kRingFull;
    parts.cpu_ns[parts.rows++] = lost_ns + (cause == kRingFull ? gap_ns : 0);
  }
  if (cause != 0 && cause != kRingFull) {
    parts.cause[parts.rows] = cause;
    parts.cpu_ns[parts.rows++] = gap_ns;
  }
  return parts;
}

void reset_accounting() {
  for (EndedRow& row : g_ended) {
    row.cpu_ns.store(0, std::memory_order_relaxed);
    row.threads.store(0, std::memory_order_relaxed);
  }
  g_ended_noise_ns.store(0, std::memory_order_relaxed);
  internal::g_unattributed_lost.store(0, std::memory_order_relaxed);
}

bool unsampled_beyond_noise(uint64_t gap_ns, uint64_t cpu_ns, uint64_t period_ns) {
  return gap_ns >= 2 * period_ns && gap_ns >= cpu_ns / 20;
}

void unsampled_time(Unsampled* out) {
  *out = Unsampled{};
  for (size_t i = 0; i < kUnsampledCauses; ++i) {
    const EndedRow& ended = g_ended[i];
    UnsampledRow& row = out->rows[i];
    row.threads = ended.threads.load(std::memory_order_acquire);
    row.cpu_ns = ended.cpu_ns.load(std::memory_order_relaxed);
    for (size_t k = 0; k < kUnsampledTids && k < row.threads; ++k)
      row.tids[k] = ended.tids[k].load(std::memory_order_relaxed);
  }
  out->noise_ns = g_ended_noise_ns.load(std::memory_order_relaxed);
  if (!running_engine().accounted()) return;
  // What the engine holds is sampled time (the ring's records): delivered
  // first (the dump calls this before it writes the table).
  running_engine().account_process(out, running_period_ns());
  // The live threads, read without the control lock (this runs from exit
  // paths and signal handlers): a thread ending meanwhile may be missed or
  // counted twice; its gap then shows in the dump's process-wide check.
  const pid_t self = current_tid();
  for (size_t index = 0; index < kMaxThreads; ++index) {
    const ThreadClock& c = g_clocks[index];
    if (!c.in_use || c.ignored) continue;
    uint64_t gap = 0, lost = 0;
    uint32_t cause = 0;
    if (!measure_gap(c, index, c.tid == self, &gap, &cause, &lost)) continue;
    const ThreadGapParts parts = split_thread_gap(lost, cause, gap);
    for (unsigned i = 0; i < parts.rows; ++i) add_to_row(out->rows[parts.cause[i] - 1], c.tid, parts.cpu_ns[i]);
    out->noise_ns += parts.noise_ns;
  }
}

}  // namespace profiling::sampler
