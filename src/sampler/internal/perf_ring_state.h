// The ring engine's state (perf_ring.h), shared by its files and by no
// other:
//   perf_ring.cc           start, stop, fork and exec; what the engine reports
//   perf_ring_open.cc      the events opened and the rings mapped (at start,
//                          or from a handler for deferred rings)
//   perf_ring_drain.cc     the rings read into the sinks: weights, losses,
//                          stacks
//   perf_ring_triggers.cc  each thread's drain timer and drain trigger
//   perf_ring_deferral.cc  the deferred rings' state machine
// The state lives in globals: the handler reaches it with no pointer of its
// own. Each is defined in the file whose job writes it.
//
// ASYNC-SIGNAL-SAFE: the functions marked so; the rest runs under the
// sampler's control lock.
#ifndef PROFIL_SAMPLER_INTERNAL_PERF_RING_STATE_H
#define PROFIL_SAMPLER_INTERNAL_PERF_RING_STATE_H

#include <linux/perf_event.h>
#include <sys/types.h>
#include <time.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "perf/event.h"
#include "perf/records.h"

namespace profiling::sampler {
struct ThreadClock;  // a thread's slot (thread_slots.h)
}  // namespace profiling::sampler

namespace profiling::sampler::ring {

inline constexpr size_t kPage = 4096;
inline constexpr unsigned kMaxRings = 1024;       // CPUs
inline constexpr unsigned kMaxExtra = 4096;       // (thread, CPU) events of threads that existed at start
inline constexpr unsigned kDefaultDataPages = 8;  // 32 KiB: 1024 records of 32 bytes
// With stacks, a record carries the top of the thread's stack, and the
// ring is larger: 512 KiB a CPU, perf record's default. The copy is at
// most 32 KiB less a record's other fields, and smaller so that a ring
// holds 32 records and 4 kernel ticks' records (stack_bytes_for): 16 KiB
// at 500 and 1000 Hz, 8 KiB at 4000 Hz.
// (16 KiB reached _start in 99.5 % of python3's, xz's and sort's samples
// and 93 % of cc1's; 32 KiB, with a 1 MiB ring, in 95 % of cc1's; 6.4 KiB
// in 22 % of sort's: bench/unwind.sh.) The kernel allocates a ring's pages
// when it is mapped, ~1.2 us a page here: the 1 MiB rings cost a short
// process 0.3 ms more (issue 12). When locked memory is short (an unprivileged user's
// kernel.perf_event_mlock_kb is shared by all of their processes), start()
// halves the ring, and with it the copy, down to kMinStackBytes before it
// gives up on the ring.
inline constexpr uint32_t kMaxStackBytes = 32768;
inline constexpr uint32_t kMinStackBytes = 2048;
inline constexpr unsigned kDefaultStackDataPages = 128;
inline constexpr unsigned kStackRecordsPerRing = 32;
// A sample as the events write it (sampling_spec): header, ip, pid/tid,
// and with PERF_SAMPLE_READ the task-clock of the thread on that CPU.
inline constexpr size_t kSampleBytes = 32, kSampleBytesWithoutRead = 24;
// PERF_RECORD_LOST with sample_id_all: header, id, lost, pid/tid.
inline constexpr size_t kLostBytes = 32;

struct Ring {
  std::atomic<perf_event_mmap_page*> page{nullptr};
  size_t data_size = 0;
  // Held while a ring is read: a handler (try) or the control side (waits).
  std::atomic<bool> busy{false};
  // Samples the kernel could not write (PERF_RECORD_LOST) whose time the
  // weights of the ring's next samples would otherwise carry (under busy).
  uint64_t pending_lost = 0;
  // With stacks: where a record that wraps around the buffer's end is made
  // whole (under busy); the others are read in place. Not on the signal
  // stack: a program's alternate stack may be 8 KiB in all.
  unsigned char* scratch = nullptr;
};

// The weight of a sample: the thread's task-clock on that CPU since its
// previous sample there, in periods, the remainder carried. A period that
// ends while the thread is in the kernel gives no sample (exclude_kernel:
// perf_swevent_hrtimer drops it), and a thread in system calls would lose
// that time; the counter still has it, and the next sample carries it, as
// perf-signal's counter read does. One entry per (slot, ring): a ring is
// drained by one reader at a time, so its entries need no atomics.
struct CpuShare {
  uint64_t last;
  int64_t remainder;
};

// The events of threads that existed at start, other than the first, that
// write into the rings through PERF_EVENT_IOC_SET_OUTPUT: the kernel
// refuses to map them (EBUSY), so their descriptors stay open.
struct Extra {
  pid_t tid;
  int fd;
};

// The deferred rings' states (perf_ring_deferral.cc).
enum : int { kRingsOpen = 0, kDeferred = 1, kOpening = 2, kRefused = 3 };

// Why opening failed, kept as numbers (a handler cannot build the text).
enum class OpenStep { none, open_event, mmap, set_output, no_cpu };
struct OpenFailure {
  OpenStep step = OpenStep::none;
  int error = 0;
  size_t bytes = 0;
};

// ---- perf_ring.cc: set at start ----
extern bool g_running;
extern uint64_t g_period_ns;
// The online CPUs at start: one ring each.
extern int g_cpus[kMaxRings];
extern unsigned g_ncpu;
extern unsigned g_data_pages;    // chosen at start (halved if refused)
extern bool g_may_halve;         // the size is ours to choose
extern uint32_t g_stack_setting; // PROFIL_RING_STACK_BYTES
// kMaxThreads x the rings, mapped at start (zero pages until used).
extern CpuShare* g_shares;
extern size_t g_shares_bytes;
extern size_t g_share_stride;  // entries per slot: the CPUs
// One record's room per ring, for records that wrap (Ring::scratch).
extern unsigned char* g_scratch;
extern size_t g_scratch_bytes;
// The deferred rings' timer (a CPU-time timer of the process, while it is
// single-threaded: perf_ring_deferral.cc).
extern timer_t g_drain_timer;
extern bool g_has_drain_timer;

// ---- perf_ring_open.cc: set when the rings open ----
extern Ring g_rings[kMaxRings];
extern std::atomic<unsigned> g_ring_count;
extern size_t g_map_bytes;
extern Extra g_extra[kMaxExtra];
extern unsigned g_extra_count;
extern bool g_sample_read;  // records carry the counter value
// Bytes of stack each record carries (PERF_SAMPLE_STACK_USER); 0: records
// carry neither registers nor stack (no stack table was installed at start).
extern uint32_t g_stack_bytes;
// Each thread's drain interval, in its CPU time (perf_ring_triggers.cc).
extern uint64_t g_thread_drain_ns;

// ---- perf_ring_drain.cc ----
// Some drain found a ring (nearly) full: records were lost, perhaps with no
// PERF_RECORD_LOST to say so yet (the kernel writes it only before its next
// record in that ring, which may never come).
extern std::atomic<bool> g_overflowed;

// ---- perf_ring_deferral.cc ----
extern std::atomic<int> g_ring_state;
extern OpenFailure g_deferred_failure;

// ---- perf_ring_open.cc ----
// The sampling events, as values: task-clock every period_ns of a thread's
// CPU time, IP and TID (and with sample_read the thread's task-clock on
// that CPU, PERF_SAMPLE_READ), with stack_bytes the registers and the top
// of the stack the unwinder needs; inherited by the threads created later
// (not a fork child, nor an exec'd image); no reader is ever woken.
perf::EventSpec sampling_spec(uint64_t period_ns, bool sample_read, uint32_t stack_bytes);
// ASYNC-SIGNAL-SAFE. How the records of the events open now are laid out.
perf::RecordFormat record_format();
// ASYNC-SIGNAL-SAFE. A sampling event of thread tid on cpu: its
// descriptor, or -errno.
long open_event(pid_t tid, int cpu, uint64_t period_ns, bool sample_read);
// The stack a record carries in a ring of data_size bytes at period_ns.
uint32_t stack_bytes_for(size_t data_size, uint64_t period_ns);
// ...with rings of pages pages (PROFIL_RING_STACK_BYTES, if set).
uint32_t stack_bytes_with(unsigned pages, uint64_t period_ns);
// ASYNC-SIGNAL-SAFE. The largest sample record.
size_t max_sample_bytes();
// ASYNC-SIGNAL-SAFE. The main thread first, then the other threads of the
// process, up to max.
unsigned list_threads(pid_t* tids, unsigned max);
// One event of thread tid opened and closed: 0, or an errno value with
// *why saying what perf refused.
int probe_event(pid_t tid, uint64_t period_ns, std::string* why);
// ASYNC-SIGNAL-SAFE. Every CPU's event and ring, as large as locked memory
// allows: 0, or an errno value with *failure.
int open_rings_as_large_as_allowed(uint64_t period_ns, OpenFailure* failure);
void close_extras();
// mapped_here false: a fork child, whose rings were not copied.
void unmap_rings(bool mapped_here);
std::string describe_failure(const OpenFailure& failure);

// ---- perf_ring_drain.cc ----
// ASYNC-SIGNAL-SAFE. The weight of a sample whose counter reads value, from
// the thread's share of that ring (updated): periods, nearest, remainder
// carried; a value below the last starts the share again (a new thread in
// the slot).
uint32_t share_weight(CpuShare& share, uint64_t value, uint64_t period_ns);
// ASYNC-SIGNAL-SAFE. A sample after a loss weighs the time of the samples
// lost too (the counter ran on): that time is not this PC's. Takes what it
// can of *pending_lost from *weight, leaving it at least 1; returns the
// periods taken (the thread's lost periods, "ring buffer full").
uint32_t take_lost(uint64_t* pending_lost, uint32_t* weight);

// ASYNC-SIGNAL-SAFE. A CPU-time timer's setting: first after first_ns,
// then every every_ns (0: once; first_ns 0: off).
inline itimerspec timer_setting(uint64_t first_ns, uint64_t every_ns) {
  itimerspec spec{};
  spec.it_value.tv_sec = static_cast<time_t>(first_ns / 1'000'000'000);
  spec.it_value.tv_nsec = static_cast<long>(first_ns % 1'000'000'000);
  spec.it_interval.tv_sec = static_cast<time_t>(every_ns / 1'000'000'000);
  spec.it_interval.tv_nsec = static_cast<long>(every_ns % 1'000'000'000);
  return spec;
}

// ---- perf_ring_triggers.cc ----
// ASYNC-SIGNAL-SAFE. Every attached thread's drain timer and trigger, on
// or off.
void arm_every_thread_drain(bool on);

// ---- perf_ring_deferral.cc ----
// ASYNC-SIGNAL-SAFE. The deferred rings' timer: one more period of the
// process's CPU time, or off.
void arm_deferred_timer();
void disarm_deferred_timer();
// ASYNC-SIGNAL-SAFE. Thread c's own CPU-time timer while the rings are
// deferred or refused: every period of its CPU time (beside the process's
// timer, which the kernel now and then leaves unfired).
void arm_deferred_thread_timer(ThreadClock& c);
// May a single-threaded process defer its rings (PROFIL_RING_DEFER)?
bool may_defer();

}  // namespace profiling::sampler::ring

#endif  // PROFIL_SAMPLER_INTERNAL_PERF_RING_STATE_H
