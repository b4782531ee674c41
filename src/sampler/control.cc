// The sampler's control surface (sampler.h). NOT async-signal-safe.
//
// Protocol for changing what the handler reads (after gperftools'
// profile-handler.cc, adapted to many threads):
//   1. build the new sink completely, outside the handler;
//   2. publish it with one atomic exchange of the sink pointer;
//   3. wait until no handler that might have read the old pointer is still
//      running (g_handlers_in_flight drops to zero; handlers are a few dozen
//      instructions, so the wait is short);
//   4. free the old sink here, never in the handler.
// The handler itself only ever sets a sink pointer to null (a buffer fault,
// Solaris' 32767 limit); the allocation stays owned here and is freed at
// the next change.
#include "sampler/sampler.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "base/settings.h"
#include "sampler/fork_exec.h"
#include "sampler/perf_ring.h"
#include "sampler/program_mask.h"
#include "sampler/segments.h"
#include "sampler/signal_front.h"
#include "sampler/sinks.h"
#include "sampler/task_sync.h"
#include "sampler/thread_clocks.h"
#include "sampler/thread_names.h"
#include "unwind/unwinder.h"

namespace profiling::sampler {
namespace {

// Serializes every control call, and is held across fork (fork_prepare).
pthread_mutex_t g_control = PTHREAD_MUTEX_INITIALIZER;

struct ControlLock {
  ControlLock() { pthread_mutex_lock(&g_control); }
  ~ControlLock() { pthread_mutex_unlock(&g_control); }
};

struct OwnedHistogram {
  HistogramTable table;  // first member: the published pointer is this one
  std::vector<Segment> segments;
  std::vector<Region> regions;
};

// Raw pointers on purpose: no static destructor may free what the handler
// reads while the process exits with sampling still on (atexit handlers such
// as _mcleanup run after this library's destructors would have).
constinit OwnedHistogram* g_owned_histogram = nullptr;
constinit PcBuffer* g_owned_pc_buffer = nullptr;
PcTable* g_installed_pc_table = nullptr;
unwind::StackTable* g_installed_stack_table = nullptr;
// The unwind tables the handler reads. Their own lock: a rebuild parses
// every new object's .eh_frame (milliseconds), which must not hold up the
// control calls of other threads; never taken in a signal handler.
pthread_mutex_t g_code_lock = PTHREAD_MUTEX_INITIALIZER;
constinit const unwind::CodeTable* g_owned_code_table = nullptr;

constinit bool g_settings_loaded = false;
constinit ClockSettings g_settings;

void wait_for_handlers() {
  while (g_handlers_in_flight.load(std::memory_order_seq_cst) != 0) sched_yield();
}

void load_settings_from_environment() {
  if (g_settings_loaded) return;
  g_settings_loaded = true;
  // base/settings.h: the same parser as profil run's, one warning line for
  // a bad value, the default used instead.
  g_settings.hz = base::hz_from_environment(::secure_getenv("PROFIL_HZ"), g_settings.hz);
  static_assert(static_cast<int>(ClockKind::automatic) == 2 && static_cast<int>(ClockKind::wall) == 3 &&
                static_cast<int>(ClockKind::perf_signal) == 4 && base::kClockNameCount == kClockKinds);
  g_settings.requested = static_cast<ClockKind>(
      base::clock_from_environment(::secure_getenv("PROFIL_CLOCK"), static_cast<int>(g_settings.requested)));
}

bool any_sink_owned() {
  return g_owned_histogram != nullptr || g_owned_pc_buffer != nullptr || g_installed_pc_table != nullptr ||
         g_installed_stack_table != nullptr;
}

// Starts the clocks when a sink appeared, stops them when none is left.
int update_clocks() {
  load_settings_from_environment();
  if (!any_sink_owned()) {
    stop_all_threads();
    return 0;
  }
  // The ring takes stacks when a stack table is installed as it starts
  // (perf_ring.h): a table that came or went since means starting again.
  if (sampling_running() && running_clock() == ClockKind::perf &&
      g_perf_ring.takes_stacks() != (g_installed_stack_table != nullptr))
    stop_all_threads();
  return start_all_threads(g_settings);
}

}  // namespace

ClockSettings clock_settings() {
  ControlLock lock;
  load_settings_from_environment();
  return g_settings;
}

int set_clock_settings(ClockSettings settings) {
  if (settings.hz < 1 || settings.hz > 100000) return EINVAL;
  if (static_cast<int>(settings.requested) >= kClockKinds) return EINVAL;
  ControlLock lock;
  load_settings_from_environment();
  g_settings = settings;
  if (sampling_running()) {  // restart with the new clock
    stop_all_threads();
    return update_clocks();
  }
  return 0;
}

ClockKind active_clock() { return running_clock(); }

unsigned active_hz() {
  if (sampling_running()) return running_hz();
  return clock_settings().hz;
}

std::string clock_fallback_reason() {
  ControlLock lock;
  return perf_fallback_reason();
}

int set_histogram(const HistogramSpec& spec) {
  auto owned = std::make_unique<OwnedHistogram>();
  owned->regions = spec.regions;
  owned->segments = resolve_segments(owned->regions);
  owned->table.regions = owned->regions.data();
  owned->table.region_count = owned->regions.size();
  owned->table.segments = owned->segments.data();
  owned->table.segment_count = owned->segments.size();
  owned->table.overflow = spec.overflow;
  owned->table.has_overflow = spec.has_overflow;
  owned->table.limit = spec.limit;
  prepare_fast_segment(&owned->table);
  install_fault_guard();

  ControlLock lock;
  // The clocks first: if they cannot run (EBUSY), nothing is installed.
  std::unique_ptr<OwnedHistogram> previous(g_owned_histogram);
  g_owned_histogram = owned.release();
  if (int error = update_clocks(); error != 0) {
    delete g_owned_histogram;
    g_owned_histogram = previous.release();
    return error;
  }
  drain_engine(true);  // what the rings hold belongs to the regions before
  g_histogram.exchange(&g_owned_histogram->table, std::memory_order_seq_cst);
  wait_for_handlers();
  return 0;  // previous is freed here, after the handlers let go of it
}

void clear_histogram() {
  ControlLock lock;
  // The last sink going: the clocks stop, so what the kernel had not
  // reported yet is delivered now (thread_clocks.h).
  if (g_owned_pc_buffer == nullptr && g_installed_pc_table == nullptr) flush_unreported_ticks();
  drain_engine(true);
  g_histogram.store(nullptr, std::memory_order_seq_cst);
  wait_for_handlers();
  delete g_owned_histogram;
  g_owned_histogram = nullptr;
  update_clocks();
}

bool histogram_active() { return g_histogram.load(std::memory_order_acquire) != nullptr; }

int set_pc_buffer(uintptr_t* samples, size_t capacity, long* previous_count) {
  std::unique_ptr<PcBuffer> fresh;
  if (samples != nullptr && capacity > 0) {
    fresh = std::make_unique<PcBuffer>();
    fresh->samples = reinterpret_cast<uint64_t*>(samples);
    fresh->capacity = capacity;
    install_fault_guard();
  }
  ControlLock lock;
  if (!fresh && g_owned_histogram == nullptr && g_installed_pc_table == nullptr) flush_unreported_ticks();
  drain_engine(true);
  std::unique_ptr<PcBuffer> previous(g_owned_pc_buffer);
  g_owned_pc_buffer = fresh.release();
  if (int error = update_clocks(); error != 0) {
    delete g_owned_pc_buffer;
    g_owned_pc_buffer = previous.release();
    return error;
  }
  g_pc_buffer.exchange(g_owned_pc_buffer, std::memory_order_seq_cst);
  wait_for_handlers();
  long count = 0;
  if (previous) count = static_cast<long>(std::min(previous->used.load(), previous->capacity));
  if (previous_count) *previous_count = count;
  return 0;
}

void set_pc_table(PcTable* table) {
  ControlLock lock;
  if (table == nullptr && g_owned_histogram == nullptr && g_owned_pc_buffer == nullptr) flush_unreported_ticks();
  drain_engine(true);
  g_installed_pc_table = table;
  g_pc_table.store(table, std::memory_order_seq_cst);
  wait_for_handlers();
  update_clocks();
}

namespace {

// Lists the objects loaded now (their CFI is read on demand, in the
// handler: unwind/code_table.h) and publishes the list: the sink protocol above, with the
// handlers' in-flight count. Called with g_code_lock held.
void publish_code_table() {
  std::unique_ptr<unwind::CodeTable> fresh = unwind::CodeTable::build(g_owned_code_table);
  const unwind::CodeTable* previous = g_code_table.exchange(fresh.get(), std::memory_order_seq_cst);
  g_owned_code_table = fresh.release();
  wait_for_handlers();
  delete previous;
}

}  // namespace

void set_stack_table(unwind::StackTable* table, uint32_t max_depth) {
  if (table != nullptr) {
    install_fault_guard();  // the unwinder reads the stack through safe_access.S
    // Always listed again: objects loaded while no stack table was
    // installed were not followed (refresh_unwind_tables() does nothing
    // then).
    pthread_mutex_lock(&g_code_lock);
    publish_code_table();
    pthread_mutex_unlock(&g_code_lock);
  }
  ControlLock lock;
  g_stack_depth.store(max_depth == 0 ? unwind::kDefaultMaxDepth : std::min(max_depth, kMaxStackDepth),
                      std::memory_order_relaxed);
  g_installed_stack_table = table;
  g_stack_table.store(table, std::memory_order_seq_cst);
  wait_for_handlers();
  update_clocks();
}

void refresh_unwind_tables() {
  if (g_stack_table.load(std::memory_order_acquire) == nullptr) return;
  pthread_mutex_lock(&g_code_lock);
  publish_code_table();
  pthread_mutex_unlock(&g_code_lock);
}

bool unwind_tables_stale() {
  pthread_mutex_lock(&g_code_lock);
  const bool stale = g_owned_code_table != nullptr && g_owned_code_table->saw_unknown_pc();
  pthread_mutex_unlock(&g_code_lock);
  return stale;
}

void before_exec() {
  ControlLock lock;
  suspend_for_exec();
  front_before_exec();
  // The new image inherits the mask (execve(2)): SIGPROF blocked there if
  // the program blocked it here (program_mask.h); our clocks are stopped.
  if (program_blocks_sampling_signal()) set_kernel_blocks_sampling_signal(true);
}

void after_failed_exec() {
  ControlLock lock;
  if (program_blocks_sampling_signal()) set_kernel_blocks_sampling_signal(false);
  front_after_failed_exec();
  resume_after_exec();
}

void fork_prepare() {
  pthread_mutex_lock(&g_code_lock);
  pthread_mutex_lock(&g_control);
}
void fork_parent() {
  pthread_mutex_unlock(&g_control);
  pthread_mutex_unlock(&g_code_lock);
}
void fork_child() {
  // Only the forking thread exists in the child, and it holds the locks.
  pthread_mutex_unlock(&g_control);
  pthread_mutex_unlock(&g_code_lock);
  // A handler that was delivering in another thread at the fork (a ring's
  // drain takes a while) left its count here, and will never take it back.
  g_handlers_in_flight.store(0, std::memory_order_relaxed);
  forget_thread_id();  // the child's one thread has its own id
  ControlLock lock;
  reset_in_child();
}

void before_thread_creation() {
  // The common case, no lock: the rings are open (or another clock runs).
  if (!g_perf_ring.deferred() && !g_perf_ring.refused(nullptr)) return;
  ControlLock lock;
  g_perf_ring.open_if_deferred();
  if (std::string why; g_perf_ring.refused(&why)) fall_back_from_refused_start(why);
}

bool sampling_signal_in_use() { return sampling_running(); }

namespace {
constinit std::atomic<bool> g_program_filtered{false};
}  // namespace

void before_seccomp_filter() {
  // A program that starts sampling under its own filter (the C API) chose
  // to: only a filter that comes while sampling runs holds it back.
  if (g_program_filtered.load(std::memory_order_acquire) || !sampling_running()) return;
  before_thread_creation();
  g_program_filtered.store(true, std::memory_order_release);
}

bool late_system_calls_allowed() { return !g_program_filtered.load(std::memory_order_acquire); }

ClockKind clock_at_start() { return start_clock(); }

void thread_started() {
  forget_thread_id();  // its first sample reads it (thread_names.h)
  current_thread_id();
  ControlLock lock;
  start_current_thread();
}

void thread_exiting() {
  remember_ending_thread_name();
  ControlLock lock;
  stop_current_thread();
}

void before_closing_descriptors(unsigned first, unsigned last) {
  if (!descriptor_in_range(first, last)) return;  // the common case: no lock
  // Nor when none of them is still open (the program closed them with a
  // raw system call and the numbers are its files now): the dump closes
  // its own files from signal handlers, where no lock may be taken.
  if (!live_descriptor_in_range(first, last)) return;
  ControlLock lock;
  switch_to_cpu_timers(first, last);
}

void thread_not_sampled() {
  ControlLock lock;
  ignore_current_thread();
}

void attach_new_threads() {
  ControlLock lock;
  sync_with_task_list();
}

Stats stats() {
  Stats s;
  s.signals = g_stats.signals.load();
  s.ticks = g_stats.ticks.load();
  s.dropped = g_stats.dropped.load();
  s.buffer_faults = g_stats.buffer_faults.load();
  return s;
}

}  // namespace profiling::sampler
