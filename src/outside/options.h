// What the outside sampler is asked to sample with (sampler.h), said once:
// its sources open their events and the process table writes its profiles
// from these same options (ProcessTable::Options holds them), and the
// period and the stack each sample carries are worked out here alone.
//
// NOT async-signal-safe: host side. Plain values.
#ifndef PROFIL_OUTSIDE_OPTIONS_H
#define PROFIL_OUTSIDE_OPTIONS_H

#include <cstdint>

#include "outside/events.h"

namespace profiling::outside {

// The smallest ring the perf source halves its rings down to (64 KiB:
// four 16 KiB stack copies), where the kernel lets a user lock no more.
inline constexpr unsigned kMinRingPages = 16;

struct SamplerOptions {
  uint32_t hz = 500;
  // What a sample is taken every period of (issue 33, --event): CPU time
  // (task-clock, every period_ns()) by default, else every event.period
  // events of a software or hardware event; the wall clock's poller only
  // with CPU time.
  Event event{};
  // The stack each sample carries (up to 65528: a record's size is 16
  // bits); 0: 16 KiB up to 1 kHz, 8 KiB (perf record --call-graph dwarf's)
  // above, as the preload's ring takes.
  uint32_t stack_bytes = 0;
  uint32_t max_depth = 128;
  // false: the PC alone (--no-stacks): no registers or stack copied.
  bool stacks = true;
  // Data pages per CPU's ring (a power of two): 2 MiB, 128 records of 16
  // KiB, so that a reader thread that a busy machine schedules late loses
  // none (512 KiB lost 12 % of a 1 kHz run beside two compilers); halved
  // down to 64 KiB where the kernel's perf_event_mlock_kb refuses more.
  unsigned ring_pages = 512;
  // The wall clock: besides the CPU samples, a thread of profil looks at
  // every thread of the tree once a period and samples those that are
  // blocked (where the program waits), from their /proc syscall files, with
  // their stacks read by process_vm_readv(2) (wall_poller.h). Nothing
  // enters the program, as with the perf clock (the inside's watcher is a
  // thread in it).
  bool wall = false;
  // A CPython process's samples get its Python frames (python_frames.h);
  // false (--no-interpreter): the native stacks alone, nothing read of
  // the interpreter's memory.
  bool interpreter_frames = true;
  // Those frames read at the sample by a BPF program on the sampling event
  // where the kernel allows it (python_bpf.h); false (--no-bpf): after the
  // fact always, by profil's reader.
  bool interpreter_frames_at_sample = true;
  // Where kernel time is sampled and the kernel gives kernel call chains,
  // each such sample's kernel functions under its user stack (issue 33,
  // kernel_symbols.h); false (--no-kernel): one "[kernel]" frame.
  bool kernel_frames = true;

  // One period of the clock in ns (1 ms for a rate of 0, which the
  // commands never ask for), 1/500 longer than the rate's: a CPU's timer
  // of exactly 2 ms (500 Hz) keeps its phase to a 250 Hz kernel's tick for
  // the whole run, and beside busy loops a process's share of the per-CPU
  // events' samples went with that phase: a 0.6 s busy loop got 0.77-1.26
  // of its CPU time in 15 runs (spread 14 %, twice the count's own), at
  // 499 or 501 Hz 0.93-1.10 (issue 32). Every count of the profile is of
  // this period, so its time stays exact.
  uint64_t period_ns() const {
    const uint64_t rate_period = hz ? 1'000'000'000ull / hz : 1'000'000;
    return rate_period + rate_period / 500;
  }
  // The events' sample period: period_ns() of CPU time, or event.period.
  uint64_t sample_period() const { return event.is_time() ? period_ns() : event.period; }
  // The stack each sample carries: stack_bytes, or its default for the rate.
  uint32_t stack_copy_bytes() const { return stack_bytes != 0 ? stack_bytes : hz > 1000 ? 8192 : 16384; }
};

}  // namespace profiling::outside

#endif  // PROFIL_OUTSIDE_OPTIONS_H
