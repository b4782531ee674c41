// Per-thread sampling slots, their accounting, and the dispatch to the
// selected engine (see thread_clocks.h and engine.h).
//
// ASYNC-SIGNAL-SAFE: unsampled_time, slot_of_tid, drain_engine,
// descriptor_in_range, live_descriptor_in_range, current_tid,
// read_clock_ns, sampling_signal_blocked, perf_fd_still_open and what they
// call (the engines' drain, gap_cause, account_process and
// descriptor_in_range; the inline checks in thread_clocks.h).
// Everything else runs under the sampler's control lock.
#include "sampler/thread_clocks.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstdio>
#include <cstring>

#include "base/io.h"
#include "base/signal_mask.h"
#include "sampler/cpu_timer_engine.h"
#include "sampler/engine.h"
#include "sampler/handler.h"
#include "sampler/perf_ring.h"
#include "sampler/thread_finder.h"

namespace profiling::sampler {
namespace internal {
ThreadClock g_clocks[kMaxThreads];
std::atomic<uint64_t> g_clock_ticks[kMaxThreads];
std::atomic<bool> g_clock_flushed[kMaxThreads];
std::atomic<uint64_t> g_clock_last_pc[kMaxThreads];
std::atomic<uint64_t> g_clock_lost[kMaxThreads];
std::atomic<uint64_t> g_unattributed_lost{0};
std::atomic<uint16_t> g_tid_hint[kTidHints];
}  // namespace internal

namespace {

using internal::g_clocks;
using internal::g_clock_ticks;
using internal::kMaxThreads;

std::atomic<uint64_t> g_period_ns{10'000'000};
bool g_running = false;
bool g_suspended = false;
unsigned g_hz = 100;
// Plain storage, constant-initialized: sampling can start before this
// library's dynamic initializers run (glibc's crti calls __gmon_start__, and
// so __monstartup, from libc's own _init).
char g_fallback_reason[256];

// The engine of each ClockKind: PROFIL_CLOCK_TABLE's third column.
#define PROFIL_CLOCK_ENGINE_ROW(id, name, engine) &engine,
Engine& (*const kEngineOf[])() = {PROFIL_CLOCK_TABLE(PROFIL_CLOCK_ENGINE_ROW)};
#undef PROFIL_CLOCK_ENGINE_ROW
static_assert(sizeof kEngineOf / sizeof kEngineOf[0] == kClockKinds);

// The engine running (or that ran last). Read without the lock by the dump,
// drain_engine and the close interposer; engines are static objects, so a
// stale one is still a valid object.
constinit std::atomic<Engine*> g_engine{nullptr};
// The clock the image started on (what profil run reports it asked for and
// got): the engine start_all_threads chose, or the one a refused deferred
// ring fell back to; a later switch to CPU-time timers does not change it.
constinit ClockKind g_start_kind = ClockKind::cpu;

Engine& current_engine() {
  Engine* running = g_engine.load(std::memory_order_acquire);
  return running != nullptr ? *running : cpu_timer_engine();
}

// ---- accounting (sampler.h, "CPU time no sample caught") ----

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

// ASYNC-SIGNAL-SAFE. The gap of clock c (index in g_clocks) now: false
// when its thread's clock cannot be read; *cause 0 when within the noise.
// *lost: the part of the gap the engine lost (the perf ring's ring_full).
bool measure_gap(const ThreadClock& c, size_t index, bool self, uint64_t* gap, uint32_t* cause, uint64_t* lost);

// One past the highest slot ever used: slots are taken lowest first, so the
// searches (one per new thread, and the thread finder's passes) stop here
// rather than walk all kMaxThreads.
size_t g_slots_high = 0;

void note_slot_used(const ThreadClock* slot) {
  const size_t index = static_cast<size_t>(slot - g_clocks) + 1;
  if (index > g_slots_high) g_slots_high = index;
}

ThreadClock* find_clock(pid_t tid) {
  for (size_t i = 0; i < g_slots_high; ++i)
    if (g_clocks[i].in_use && g_clocks[i].tid == tid) return &g_clocks[i];
  return nullptr;
}

void add_to_ended(uint32_t cause, pid_t tid, uint64_t gap) {
  EndedRow& row = g_ended[cause - 1];
  const uint32_t n = row.threads.load(std::memory_order_relaxed);
  if (n < kUnsampledTids) row.tids[n].store(tid, std::memory_order_relaxed);
  row.cpu_ns.fetch_add(gap, std::memory_order_relaxed);
  row.threads.store(n + 1, std::memory_order_release);
}

// A clock released while its thread runs unsampled (blocked signals, a
// closed counter) keeps what it missed in g_ended.
void account_released(const ThreadClock& c) {
  if (!current_engine().accounted()) return;  // wall samples sleep too
  if (c.ignored) return;  // a watcher of ours: never sampled on purpose
  const size_t index = static_cast<size_t>(&c - g_clocks);
  uint64_t gap = 0, lost = 0;
  uint32_t cause = 0;
  if (!measure_gap(c, index, c.tid == current_tid(), &gap, &cause, &lost)) return;
  if (lost != 0) add_to_ended(static_cast<uint32_t>(UnsampledCause::ring_full), c.tid, lost);
  if (cause == 0) {
    g_ended_noise_ns.fetch_add(gap, std::memory_order_relaxed);
    return;
  }
  add_to_ended(cause, c.tid, gap);
}

void reset_accounting() {
  for (EndedRow& row : g_ended) {
    row.cpu_ns.store(0, std::memory_order_relaxed);
    row.threads.store(0, std::memory_order_relaxed);
  }
  g_ended_noise_ns.store(0, std::memory_order_relaxed);
  internal::g_unattributed_lost.store(0, std::memory_order_relaxed);
}

void release_clock(ThreadClock& c) {
  // What the engine still holds of the thread (the ring's records) is read
  // before the thread's accounting is closed.
  if (!c.ignored) current_engine().thread_detaching(c);
  account_released(c);
  if (!c.ignored) current_engine().thread_released(c);
  c.has_timer = false;
  c.perf_fd = -1;
  c.ignored = false;
  c.in_use = false;
  c.tid = 0;
}

// Creates and arms the clock of thread tid. false when the thread is gone
// or no slot is left.
bool attach(pid_t tid) {
  if (ThreadClock* stale = find_clock(tid)) {
    if (stale->ignored) return true;
    release_clock(*stale);  // tid reused
  }
  ThreadClock* slot = nullptr;
  for (ThreadClock& c : g_clocks)
    if (!c.in_use) {
      slot = &c;
      break;
    }
  if (slot == nullptr) return false;
  const size_t index = slot_index(*slot);
  const int64_t cpu_now = read_clock_ns(thread_cpu_clock(tid));
  slot->cpu_at_attach_ns = cpu_now > 0 ? static_cast<uint64_t>(cpu_now) : 0;
  g_clock_ticks[index].store(0, std::memory_order_relaxed);
  internal::g_clock_flushed[index].store(false, std::memory_order_relaxed);
  internal::g_clock_last_pc[index].store(0, std::memory_order_relaxed);
  internal::g_clock_lost[index].store(0, std::memory_order_relaxed);
  slot->tid = tid;
  if (!current_engine().thread_attached(*slot)) {
    slot->tid = 0;
    return false;
  }
  slot->in_use = true;
  note_slot_used(slot);
  internal::g_tid_hint[static_cast<uint32_t>(tid) % internal::kTidHints].store(static_cast<uint16_t>(index + 1),
                                                                              std::memory_order_release);
  current_engine().arm_thread(*slot, true);
  return true;
}

// Records why the process runs `next` rather than what it asked for.
void set_fallback_reason(const char* what, const Engine& next) {
  std::snprintf(g_fallback_reason, sizeof g_fallback_reason, "%s; using %s", what, next.describe());
}

}  // namespace

int start_all_threads(const ClockSettings& settings) {
  if (g_running) return 0;
  int error = install_sampling_handler();
  if (error != 0) return error;
  g_hz = settings.hz;
  g_period_ns.store(1'000'000'000ull / settings.hz, std::memory_order_relaxed);
  g_fallback_reason[0] = '\0';
  // The requested engine, else its fallbacks (perf ring -> perf-signal ->
  // cpu, engine.h): the last refusal is the reason given. No probe before
  // the ring: a process pays its perf_event_open calls at every start.
  Engine* engine = &kEngineOf[static_cast<size_t>(settings.requested)]();
  for (std::string why; engine->start(g_period_ns.load(std::memory_order_relaxed), &why) != 0; why.clear()) {
    Engine* next = engine->fallback();
    if (next == nullptr) break;  // no engine without a fallback fails to start
    set_fallback_reason(why.c_str(), *next);
    engine = next;
  }
  g_engine.store(engine, std::memory_order_release);
  g_start_kind = engine->kind();
  g_running = true;
  g_suspended = false;
  // Threads that exist now; threads created later attach themselves
  // (start_current_thread, from the pthread_create wrapper).
  if (DIR* dir = ::opendir("/proc/self/task")) {
    while (dirent* entry = ::readdir(dir)) {
      if (entry->d_name[0] == '.') continue;
      pid_t tid = static_cast<pid_t>(std::atoi(entry->d_name));
      if (tid > 0) attach(tid);
    }
    ::closedir(dir);
  } else {
    attach(current_tid());
  }
  // Without the pthread_create wrapper (a static program), threads created
  // from now on are found by the thread finder.
  start_thread_finder();
  return 0;
}

void stop_all_threads() {
  for (ThreadClock& c : g_clocks)
    if (c.in_use && !c.ignored) release_clock(c);
  if (g_running) current_engine().stop();
  g_running = false;
}

bool sampling_running() { return g_running; }

void start_current_thread() {
  if (g_running && !g_suspended) attach(current_tid());
}

void stop_current_thread() {
  if (ThreadClock* c = find_clock(current_tid())) {
    flush_unreported_ticks(c->tid);
    release_clock(*c);
  }
}

void flush_unreported_ticks(pid_t only_tid) {
  // Only CPU-time timers report late (cpu, and wall's running threads);
  // perf's counters are read exactly.
  if (g_running) current_engine().flush_unreported(only_tid);
}

void ignore_current_thread() {
  const pid_t tid = current_tid();
  ThreadClock* slot = find_clock(tid);
  if (slot != nullptr) {
    release_clock(*slot);
  } else {
    for (ThreadClock& c : g_clocks)
      if (!c.in_use) {
        slot = &c;
        break;
      }
    if (slot == nullptr) return;
  }
  slot->tid = tid;
  slot->ignored = true;
  slot->in_use = true;
  note_slot_used(slot);
}

void sync_with_task_list() {
  if (!g_running || g_suspended) return;
  // Static: 16 KiB each, and the finder runs on a small stack. The control
  // lock serializes the callers.
  static pid_t present[kMaxThreads];
  static bool has_clock[kMaxThreads];
  size_t count = 0;
  bool complete = true;
  DIR* dir = ::opendir("/proc/self/task");
  if (dir == nullptr) return;
  while (dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    const pid_t tid = static_cast<pid_t>(std::atoi(entry->d_name));
    if (tid <= 0) continue;
    if (count == kMaxThreads) {
      complete = false;
      break;
    }
    present[count++] = tid;
  }
  ::closedir(dir);
  std::sort(present, present + count);
  std::fill(has_clock, has_clock + count, false);
  // One pass over the slots: a clock whose thread is gone is released (only
  // when the list is complete), one whose thread is there is marked.
  for (size_t i = 0; i < g_slots_high; ++i) {
    ThreadClock& c = g_clocks[i];
    if (!c.in_use) continue;
    const pid_t* at = std::lower_bound(present, present + count, c.tid);
    if (at != present + count && *at == c.tid)
      has_clock[at - present] = true;
    else if (complete)
      release_clock(c);
  }
  for (size_t i = 0; i < count; ++i)
    if (!has_clock[i]) attach(present[i]);
}

void suspend_for_exec() {
  if (!g_running) return;
  g_suspended = true;
  current_engine().suspend_for_exec();
  for (ThreadClock& c : g_clocks)
    if (c.in_use && !c.ignored) current_engine().arm_thread(c, false);
  discard_pending_sampling_signal();
}

void resume_after_exec() {
  if (!g_running || !g_suspended) return;
  g_suspended = false;
  current_engine().resume_after_exec();
  for (ThreadClock& c : g_clocks)
    if (c.in_use && !c.ignored) current_engine().arm_thread(c, true);
}

void reset_in_child() {
  // What the parent's threads had is the engine's to forget (its timers are
  // not inherited; its perf descriptors are copies the parent still uses).
  for (ThreadClock& c : g_clocks) {
    if (!c.in_use) continue;
    if (!c.ignored) current_engine().forget_in_child(c);
    c = ThreadClock{};
  }
  reset_accounting();  // the parent's threads are not the child's
  if (g_running) {
    // The child's own events and rings (perf_ring.h: none are inherited),
    // its watcher; or the fallback's.
    Engine* engine = &current_engine();
    const uint64_t period = g_period_ns.load(std::memory_order_relaxed);
    for (std::string why; engine->fork_child(period, &why) != 0; why.clear()) {
      Engine* next = engine->fallback();
      if (next == nullptr) break;
      set_fallback_reason(why.c_str(), *next);
      engine = next;
    }
    g_engine.store(engine, std::memory_order_release);
    g_start_kind = engine->kind();
  }
  if (g_running && !g_suspended) attach(current_tid());
  restart_thread_finder_in_child();
}

bool switch_to_cpu_timers(unsigned first, unsigned last) {
  // Only an engine whose descriptors a close reaches (perf-signal's
  // counters; the ring's mappings need none, perf_ring.h).
  if (!g_running || !current_engine().descriptor_in_range(first, last, true)) return false;
  const ClockSettings cpu{ClockKind::cpu, g_hz};
  // Each thread's perf interval is accounted as its clock is released; the
  // timers start a new one. The closing thread's own close then finds only
  // descriptors that are no longer ours.
  const ClockKind started_on = g_start_kind;
  stop_all_threads();
  start_all_threads(cpu);
  g_start_kind = started_on;
  std::snprintf(g_fallback_reason, sizeof g_fallback_reason,
                "the program closed the perf counters' descriptors; switched to %s", cpu_timer_engine().describe());
  return true;
}

// A deferred perf ring refused (locked memory) in a process that has not
// created a thread since: the ring's process CPU-time timer samples it
// (perf_ring.cc), as the cpu clock's timers would.
bool sampled_by_refused_ring() { return &current_engine() == &perf_ring_engine() && g_perf_ring.refused(nullptr); }

void fall_back_from_refused_ring(const std::string& why) {
  if (!g_running || &current_engine() != &perf_ring_engine() || current_engine().fallback() == nullptr) return;
  // The deferred sample timer's ticks are accounted as each thread's clock
  // is released; the fallback starts new intervals.
  const ClockSettings settings{current_engine().fallback()->kind(), g_hz};
  stop_all_threads();
  start_all_threads(settings);
  set_fallback_reason(why.c_str(), current_engine());
}

ClockKind start_clock() { return sampled_by_refused_ring() ? ClockKind::cpu : g_start_kind; }

bool descriptor_in_range(unsigned first, unsigned last) {
  return current_engine().descriptor_in_range(first, last, false);
}

bool live_descriptor_in_range(unsigned first, unsigned last) {
  return current_engine().descriptor_in_range(first, last, true);
}

pid_t current_tid() { return static_cast<pid_t>(::syscall(SYS_gettid)); }

// The kernel's encoding (MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED) in
// include/linux/posix-timers.h), which pthread_getcpuclockid also uses.
clockid_t thread_cpu_clock(pid_t tid) {
  return static_cast<clockid_t>((~static_cast<unsigned>(tid) << 3) | 4 | 2);
}

// ASYNC-SIGNAL-SAFE. -1 when the clock cannot be read (the thread is gone).
int64_t read_clock_ns(clockid_t clock) {
  timespec ts{};
  if (::clock_gettime(clock, &ts) != 0) return -1;
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// ASYNC-SIGNAL-SAFE (open, read, close, readlink, pthread_sigmask and
// clock_gettime are on signal-safety(7)'s list; errno is the caller's to
// keep: the dump saves it). Is the sampling signal blocked in thread tid? The
// calling thread asks pthread_sigmask; another thread's mask is the SigBlk
// line of /proc/self/task/TID/status (proc(5)), read with open/read.
bool sampling_signal_blocked(pid_t tid, bool self) {
  if (self) {
    // The kernel's mask from before profil's own block (a dump, a handler
    // of ours), not the program's view (program_mask.h): a thread whose
    // program "blocks" SIGPROF is sampled.
    if (const sigset_t* before = base::interrupted_mask()) return sigismember(before, kSamplingSignal) == 1;
    sigset_t mask;
    return base::raw_sigprocmask(SIG_BLOCK, nullptr, &mask) == 0 && sigismember(&mask, kSamplingSignal) == 1;
  }
  char path[64] = "/proc/self/task/";
  size_t n = std::strlen(path);
  n += base::format_decimal(static_cast<unsigned>(tid), path + n);
  std::memcpy(path + n, "/status", sizeof "/status");
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char text[4096];
  ssize_t got = ::read(fd, text, sizeof text - 1);
  ::close(fd);
  if (got <= 0) return false;
  text[got] = '\0';
  const char* line = std::strstr(text, "\nSigBlk:");
  if (line == nullptr) return false;
  line += sizeof "\nSigBlk:" - 1;
  while (*line == ' ' || *line == '\t') ++line;
  uint64_t mask = 0;
  for (; (*line >= '0' && *line <= '9') || (*line >= 'a' && *line <= 'f'); ++line)
    mask = mask << 4 | static_cast<uint64_t>(*line <= '9' ? *line - '0' : *line - 'a' + 10);
  return (mask >> (kSamplingSignal - 1)) & 1;
}

// ASYNC-SIGNAL-SAFE: is a perf counter still open on fd? The program may
// have closed it with a raw system call (past the interposed close), and
// the number may since name another file.
bool perf_fd_still_open(int fd) {
  char path[48] = "/proc/self/fd/";
  size_t n = std::strlen(path);
  path[n + base::format_decimal(static_cast<unsigned>(fd), path + n)] = '\0';
  char target[64];
  ssize_t got = ::readlink(path, target, sizeof target - 1);
  if (got <= 0) return false;
  target[got] = '\0';
  return std::strcmp(target, "anon_inode:[perf_event]") == 0;
}

namespace {

bool measure_gap(const ThreadClock& c, size_t index, bool self, uint64_t* gap, uint32_t* cause, uint64_t* lost) {
  const int64_t now = read_clock_ns(self ? CLOCK_THREAD_CPUTIME_ID : thread_cpu_clock(c.tid));
  if (now < 0) return false;
  const uint64_t cpu = static_cast<uint64_t>(now) > c.cpu_at_attach_ns ? static_cast<uint64_t>(now) - c.cpu_at_attach_ns : 0;
  const uint64_t period = g_period_ns.load(std::memory_order_relaxed);
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
  if (!unsampled_beyond_noise(*gap, cpu, period * current_engine().noise_periods())) return true;
  *cause = static_cast<uint32_t>(current_engine().gap_cause(c, self));
  return true;
}

}  // namespace

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
  if (!current_engine().accounted()) return;
  // What the engine holds is sampled time (the ring's records): delivered
  // first (the dump calls this before it writes the table).
  current_engine().account_process(out, g_period_ns.load(std::memory_order_relaxed));
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
    if (lost != 0) add_to_row(out->rows[static_cast<size_t>(UnsampledCause::ring_full) - 1], c.tid, lost);
    if (cause == 0)
      out->noise_ns += gap;
    else
      add_to_row(out->rows[cause - 1], c.tid, gap);
  }
}

int slot_of_tid(pid_t tid) {
  const unsigned hint = internal::g_tid_hint[static_cast<uint32_t>(tid) % internal::kTidHints].load(
      std::memory_order_acquire);
  if (hint != 0 && g_clocks[hint - 1].tid == tid && g_clocks[hint - 1].in_use) return static_cast<int>(hint - 1);
  // Two live threads whose ids agree in the low 16 bits: look.
  for (size_t i = 0; i < g_slots_high; ++i)
    if (g_clocks[i].in_use && g_clocks[i].tid == tid) return static_cast<int>(i);
  return -1;
}

uint32_t drain_engine(bool wait) { return current_engine().drain(wait); }

void deliver_pending_samples() { drain_engine(false); }

ClockKind running_clock() { return sampled_by_refused_ring() ? ClockKind::cpu : current_engine().kind(); }
unsigned running_hz() { return g_hz; }
uint64_t running_period_ns() { return g_period_ns.load(std::memory_order_relaxed); }
std::string perf_fallback_reason() { return std::string(g_fallback_reason); }

}  // namespace profiling::sampler
