// The ring engine's drain (perf_ring.h): every ring's records read into the
// sinks. Each sample weighs the thread's task-clock since its previous
// sample on that CPU, bounded by the thread's CPU time; the samples the
// kernel lost (PERF_RECORD_LOST) are the thread's "ring buffer full"; with
// stacks, each record's copy of the stack is unwound. The records are
// walked and parsed by the perf layer (perf/ring.h, perf/records.h).
//
// ASYNC-SIGNAL-SAFE: everything here (the handler drains): clock_gettime,
// madvise, atomics, a ring's try-lock, the perf layer's walk and parsers;
// no allocation, no lock, and errno (clock_gettime and madvise may set it)
// is the handler's to save. PerfRingEngine::drain(true) waits for a ring
// another thread reads: not from a handler.
#include <asm/perf_regs.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <sys/mman.h>
#include <time.h>

#include <atomic>
#include <cstring>

#include "perf/records.h"
#include "perf/ring.h"
#include "sampler/fault_signals.h"
#include "sampler/internal/perf_ring_state.h"
#include "sampler/perf_ring.h"
#include "sampler/sinks.h"
#include "sampler/thread_slots.h"
#include "unwind/memory.h"
#include "unwind/unwinder.h"

namespace profiling::sampler {
namespace ring {

constinit std::atomic<bool> g_overflowed{false};

// The registers the records carry are the ones the unwinder starts from.
static_assert(perf::kUnwindRegisters ==
              ((uint64_t{1} << PERF_REG_X86_BP) | (uint64_t{1} << PERF_REG_X86_SP) | (uint64_t{1} << PERF_REG_X86_IP)));

uint32_t share_weight(CpuShare& share, uint64_t value, uint64_t period_ns) {
  if (value < share.last) share = CpuShare{0, 0};  // a new thread in the slot
  const int64_t period = static_cast<int64_t>(period_ns);
  const int64_t elapsed = static_cast<int64_t>(value - share.last) + share.remainder;
  int64_t periods = (elapsed + period / 2) / period;
  if (periods < 0) periods = 0;
  share.remainder = elapsed - periods * period;
  share.last = value;
  return static_cast<uint32_t>(periods > 1'000'000 ? 1'000'000 : periods);
}

uint32_t take_lost(uint64_t* pending_lost, uint32_t* weight) {
  if (*pending_lost == 0 || *weight <= 1) return 0;
  const uint32_t taken = static_cast<uint32_t>(*pending_lost < *weight - 1 ? *pending_lost : *weight - 1);
  *weight -= taken;
  *pending_lost -= taken;
  return taken;
}

namespace {

// Where the unwinder reads when it walks a record's copy of a stack: the
// copy, and beyond it only the code of the loaded objects (a signal
// trampoline is recognised by its bytes, which have not changed since the
// sample) — never the live stack, which has moved on.
class RecordMemory final : public unwind::MemoryReader {
 public:
  RecordMemory(uint64_t base, const unsigned char* bytes, size_t size, const unwind::CodeTable* code)
      : window_(base, bytes, size, nullptr), code_(code) {}
  bool read(uint64_t address, uint64_t* value) const override {
    if (window_.read(address, value)) return true;
    if (code_ == nullptr || code_->object_of(address) == nullptr || code_->object_of(address + 7) == nullptr)
      return false;
    return live_.read(address, value);
  }

 private:
  unwind::StackWindow window_;
  const unwind::CodeTable* code_;
  unwind::LiveMemory live_;
};

// No more ticks for a thread than its CPU time. The task-clock runs on the
// scheduler's local clock, which in a virtual machine goes on while the
// host has taken the CPU away (steal time); the thread's CPU time does not
// count that (CONFIG_PARAVIRT_TIME_ACCOUNTING). Under host load the ring's
// weights then ran ahead of the CPU time (1.4x seen in one loaded pass of
// the suite). The CPU time read at the drain bounds every sample drained,
// which was taken before; one read per thread and drain (a few recent ones
// kept in the caller's cache).
struct CpuBound {
  int slot;
  uint64_t ticks;  // the most the slot's ticks may reach
};
uint32_t within_thread_cpu(int slot, uint32_t weight, CpuBound* cache, unsigned* cached) {
  CpuBound* bound = nullptr;
  for (unsigned i = 0; i < *cached; ++i)
    if (cache[i].slot == slot) bound = &cache[i];
  if (bound == nullptr) {
    const ThreadClock& clock = internal::g_clocks[slot];
    // A thread's CPU clock (clock_getcpuclockid(3)'s encoding for a tid).
    const auto id = static_cast<clockid_t>((~static_cast<unsigned>(clock.tid) << 3) | 6);
    timespec now{};
    if (::clock_gettime(id, &now) != 0) return weight;
    const uint64_t cpu = static_cast<uint64_t>(now.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(now.tv_nsec);
    const uint64_t ran = cpu > clock.cpu_at_attach_ns ? cpu - clock.cpu_at_attach_ns : 0;
    // Each CPU's event rounds its weights to the nearest period.
    const uint64_t slack = g_ring_count.load(std::memory_order_relaxed) + 1;
    bound = &cache[*cached < 8 ? (*cached)++ : static_cast<unsigned>(slot) % 8];
    *bound = CpuBound{slot, ran / g_period_ns + slack};
  }
  const uint64_t ticks = internal::g_clock_ticks[slot].load(std::memory_order_relaxed);
  if (ticks >= bound->ticks) return 0;
  return bound->ticks - ticks < weight ? static_cast<uint32_t>(bound->ticks - ticks) : weight;
}

// The kernel copies a stack from its timer interrupt, where it cannot fault
// a page in: the copy stops at the first page of the stack that is not
// resident — a page of a large local array the program never touched,
// between the sampled frame and its callers (coreutils sort: 80 % of the
// copies stopped 1-2 KiB above rsp, and the walk with them; perf record
// --call-graph dwarf loses the same stacks). Populating such a page for
// reading (MADV_POPULATE_READ, Linux 5.14) maps the shared zero page there,
// read-only, as the program's own first read would: no memory is used and
// the program's first write faults exactly as it would have; the next
// samples of that frame copy through it. madvise, not a load: a page past
// the stack's end (unmapped, a guard) is an error return, never a fault —
// the drain also runs in the final dump of a process that is ending on a
// signal, with SIGSEGV blocked.
void make_stack_copyable(uint64_t from, uint64_t to) {
#ifndef MADV_POPULATE_READ
  constexpr int MADV_POPULATE_READ = 22;
#endif
  const uint64_t first = from & ~uint64_t{kPage - 1};
  if (to > first) ::madvise(reinterpret_cast<void*>(first), to - first, MADV_POPULATE_READ);
}

// A sample's registers and stack copy (PERF_SAMPLE_REGS_USER,
// PERF_SAMPLE_STACK_USER), unwound into the stack table. A sample whose
// registers the kernel could not take (abi 0) or with no stack copied adds
// nothing: its flat sample stands alone, as with a failed live unwind.
void deliver_record_stack(const perf::Sample& sample, uint32_t weight) {
  unwind::StackTable* stacks = g_stack_table.load(std::memory_order_acquire);
  if (stacks == nullptr) return;
  if (sample.regs_abi == PERF_SAMPLE_REGS_ABI_NONE || sample.reg_count < 3 || sample.stack_size == 0) return;
  const uint64_t sp = sample.regs[perf::kUnwindRegisterSp];
  const RecordMemory memory(sp, sample.stack, static_cast<size_t>(sample.stack_copied),
                            g_code_table.load(std::memory_order_acquire));
  unwind::Registers start;
  start.pc = sample.regs[perf::kUnwindRegisterIp];
  start.sp = sp;
  start.fp = sample.regs[perf::kUnwindRegisterBp];
  // A walk that ran off the end of a copy the kernel cut short (not one
  // that reached the stack's end: that walk completed).
  if (deliver_unwound_stack(stacks, memory, start, weight, static_cast<int32_t>(sample.who.tid)).truncated &&
      sample.stack_copied < sample.stack_size)
    make_stack_copyable(sp + sample.stack_copied, sp + sample.stack_size);
}

// One sample of ring ring_index into the sinks; returns the ticks delivered.
uint32_t deliver_sample(Ring& ring, unsigned ring_index, const perf::Sample& sample, CpuBound* bounds,
                        unsigned* bounded) {
  const int slot = slot_of_tid(static_cast<pid_t>(sample.who.tid));
  // A thread of ours (the thread finder of a static program) inherits the
  // events too: its samples are not the program's.
  if (slot >= 0 && slot_is_ignored(slot)) return 0;
  uint32_t weight =
      slot >= 0 && g_sample_read && g_shares != nullptr
          ? share_weight(g_shares[static_cast<size_t>(slot) * g_share_stride + ring_index], sample.read_value,
                         g_period_ns)
          : 1;
  // The time of the samples lost goes to the thread's lost periods (shown
  // as "ring buffer full").
  if (const uint32_t taken = take_lost(&ring.pending_lost, &weight); taken != 0 && slot >= 0)
    count_ring_lost_slot(slot, taken);
  if (slot >= 0 && g_sample_read && weight != 0) weight = within_thread_cpu(slot, weight, bounds, bounded);
  if (slot >= 0) count_ring_sample(slot, sample.ip, weight);
  if (weight == 0) return 0;
  deliver(sample.ip, weight);
  if (g_stack_bytes != 0) deliver_record_stack(sample, weight);
  return weight;
}

// A LOST record: with the counter in each record, the next samples carry
// the lost time (deliver_sample); without it, the lost periods are the
// thread's that the record names (the one running when it was written).
void note_lost(Ring& ring, const perf::Lost& lost) {
  if (g_sample_read && g_shares != nullptr)
    ring.pending_lost += lost.lost;
  else
    count_ring_lost(static_cast<pid_t>(lost.who.tid), lost.lost);
}

// Reads every record of one ring; returns the ticks delivered.
uint32_t drain_ring(Ring& ring, perf_event_mmap_page* page, unsigned ring_index) {
  perf::RingReader reader(page, kPage + ring.data_size);
  const perf::RecordFormat format = record_format();
  // A record that wraps around the end of the buffer is made whole in the
  // ring's scratch (with stacks), else here (the kernel does not reuse its
  // space until data_tail moves past it).
  alignas(8) unsigned char small[64];
  unsigned char* scratch = ring.scratch != nullptr ? ring.scratch : small;
  const size_t scratch_bytes = ring.scratch != nullptr ? g_scratch_bytes : sizeof small;
  CpuBound bounds[8];
  unsigned bounded = 0;
  uint32_t delivered = 0;
  // perf_event_open(2): data_head, then a read barrier before the data.
  const uint64_t head = reader.head();
  uint64_t tail = reader.tail();
  if (head - tail + max_sample_bytes() + kLostBytes > ring.data_size)
    g_overflowed.store(true, std::memory_order_relaxed);
  const auto visit = [&](const perf::Record& record) {
    if (record.header.type == PERF_RECORD_SAMPLE) {
      perf::Sample sample;
      if (perf::parse_sample(format, record, &sample))
        delivered += deliver_sample(ring, ring_index, sample, bounds, &bounded);
    } else if (record.header.type == PERF_RECORD_LOST) {
      perf::Lost lost;
      if (perf::parse_lost(format, record, &lost)) note_lost(ring, lost);
    }
  };
  perf::walk_records(reader.data(), reader.data_size(), head, &tail, scratch, scratch_bytes, visit);
  // Records read before the kernel may reuse their space (release).
  reader.consume_to(tail);
  return delivered;
}

}  // namespace
}  // namespace ring

uint32_t PerfRingEngine::drain(bool wait) {
  // The unwinder's loads, wherever the drain runs (a sigwait slice, the
  // exit's dump) and whatever the program blocks (fault_signals.h).
  FaultSignalsOpen fault_signals;
  uint32_t delivered = 0;
  const unsigned count = ring::g_ring_count.load(std::memory_order_acquire);
  for (unsigned i = 0; i < count; ++i) {
    ring::Ring& ring = ring::g_rings[i];
    bool expected = false;
    // A handler tries once and moves on (the holder reads the ring anyway);
    // the control side waits for a handler in another thread to finish.
    // (A handler interrupting this thread while it holds a ring fails its
    // try and returns, so the wait never waits for itself.)
    while (!ring.busy.compare_exchange_weak(expected, true, std::memory_order_acquire)) {
      if (!wait && expected) break;
      expected = false;
      if (wait) sched_yield();
    }
    if (!wait && expected) continue;
    if (perf_event_mmap_page* page = ring.page.load(std::memory_order_acquire)) {
      g_handlers_in_flight.fetch_add(1, std::memory_order_seq_cst);
      delivered += ring::drain_ring(ring, page, i);
      g_handlers_in_flight.fetch_sub(1, std::memory_order_release);
    }
    ring.busy.store(false, std::memory_order_release);
  }
  return delivered;
}

bool PerfRingEngine::overflowed() const { return ring::g_overflowed.load(std::memory_order_relaxed); }

}  // namespace profiling::sampler
