// The preload runtime (preload.h): start-up, the once-only dump, fork, exec,
// exit and _exit.
#include "runtime/preload.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "base/errno_saver.h"
#include "base/file_limit.h"
#include "base/io.h"
#include "base/signal_mask.h"
#include "runtime/process_end.h"
#include "runtime/export.h"
#include "runtime/process_hooks.h"
#include "runtime/profraw_writer.h"
#include "runtime/snapshot_request.h"
#include "base/settings.h"
#include "format/run_names.h"
#include "sampler/handler_stack.h"
#include "sampler/sampler.h"
#include "unwind/stack_table.h"
#include "unwind/unwinder.h"

namespace profiling::runtime {
namespace {

using format::profraw::EndReason;

// Room for the distinct sampled PCs of one process: 16 bytes each, mapped
// once (1 MiB; untouched pages cost nothing, but a fork child clears the
// whole table). A minute of a large program at 500 Hz samples some ten
// thousand distinct PCs; what does not fit is counted in the header's
// dropped field and reported. PROFIL_TABLE_SIZE overrides.
constexpr size_t kDefaultTableCapacity = size_t{1} << 16;

enum DumpState : int { kIdle = 0, kWriting = 1, kDone = 2 };

bool g_active = false;
sampler::PcTable* g_table = nullptr;
// Whole stacks (PROFIL_STACKS=1, issue 13): distinct stacks and the frames
// they hold, mapped once; untouched pages cost nothing. 64 Ki stacks of 16
// frames on average fit; what does not is counted as dropped.
constexpr size_t kStackTableStacks = size_t{1} << 16;
constexpr size_t kStackTableFrames = size_t{1} << 20;
unwind::StackTable* g_stacks = nullptr;
uint32_t g_max_depth = unwind::kDefaultMaxDepth;
std::atomic<pid_t> g_owner_pid{0};
std::atomic<int> g_dump_state{kIdle};
std::atomic<pid_t> g_dump_tid{0};
// A complete profile is in the directory (a provisional dump's, at least).
bool g_dumped_once = false;
// The placeholder choose_name created is still empty: the first dump is
// written into it rather than renamed over it (profraw_writer.h).
bool g_placeholder_empty = false;
char g_dir[PATH_MAX] = {};
// The run's ledger (format/profraw.h, LedgerRecord): its name in the
// directory ("" without a run id), and whether this image recorded its
// start there. Then it names and writes a profraw only once it has a
// sample, and an image that ends with none records its end in the ledger
// instead: no file of its own.
char g_ledger[format::kLedgerNameSize] = {};
bool g_in_ledger = false;
bool g_end_in_ledger = false;  // this image's end is recorded there
char g_name[256] = {};
char g_run_id[format::profraw::kRunIdSize + 1] = {};
uint32_t g_hz = 0;
int64_t g_start_ns = 0;
uint64_t g_signals_at_start = 0;
uint64_t g_ticks_at_start = 0;
int64_t g_cpu_at_start = 0;  // CLOCK_PROCESS_CPUTIME_ID when sampling started
// ...and once the clocks ran: what lies between is libprofil's own start
// (the ledger's record, the stack table, the engine's probe and timers),
// which no clock can sample. It is neither the program's nor unsampled:
// left out of the "unknown" row (issue 20: under load it reached 4-5 ms of
// a short process, and every /bin/true of a shell loop got an "unknown"
// line).
int64_t g_cpu_at_clocks = 0;

using exit_fn = void (*)(int);
exit_fn g_real_exit = nullptr;
exit_fn g_real_Exit = nullptr;
exit_fn g_real_quick_exit = nullptr;
exit_fn g_real_exit_function = nullptr;  // exit(3)

pid_t current_tid() { return static_cast<pid_t>(::syscall(SYS_gettid)); }

int64_t clock_ns(clockid_t clock) {
  timespec ts{};
  ::clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}
int64_t realtime_ns() { return clock_ns(CLOCK_REALTIME); }

uint32_t clock_code(sampler::ClockKind clock) {
  // profraw.h: 0 cpu, 1 perf (ring), 2 wall, 3 perf-signal.
  switch (clock) {
    case sampler::ClockKind::perf: return 1;
    case sampler::ClockKind::wall: return 2;
    case sampler::ClockKind::perf_signal: return 3;
    default: return 0;
  }
}

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

// The output directory, opened once at start and kept (above the
// descriptors programs count on), so that a rename of its path cannot
// redirect the dump; writes go through /proc/self/fd/N while that is still
// the same directory, else (the program closed or reused the descriptor)
// through the path.
int g_dirfd = -1;
dev_t g_dir_dev = 0;
ino_t g_dir_ino = 0;
char g_dirfd_path[32] = {};

// The run's token, the last part of PROFIL_RUN_ID after its last '-' (8
// hex digits, make_run_id), or nullptr without one. ASYNC-SIGNAL-SAFE.
const char* run_token() { return format::run_token(g_run_id); }

// "<progname>.<pid>.run-<token>.profraw" (format/run_names.h), the token
// being the last part of PROFIL_RUN_ID (issue 11: profil run opens only the files its own run
// named, so a file planted in a shared directory is never read); without a
// run id, "<progname>.<pid>.profraw". When the directory already holds the
// name (an exec'd image of the same name keeps the pid; a pid used again
// later in a long run), ".<n>" goes before the extension.
//
// The name is taken by creating its temporary "<name>.tmp.<pid>", empty,
// 0600: a placeholder the first dump is written into and renamed from
// (profraw_writer.h). One left empty at the end tells profil run that this
// process started profiling and wrote no profile — it could not (a full
// disk, privileges dropped) or was given no chance — which, for a
// descendant of the program, nothing else would tell. Runs at start and in
// the fork child handler when there is no ledger (begin_image), else at the
// image's first dump. ASYNC-SIGNAL-SAFE.
bool kept_directory_intact();

void choose_name() {
  const pid_t pid = ::getpid();
  const char* token = run_token();
  base::ErrnoSaver errno_saver;  // the fork child's errno is the program's
  g_placeholder_empty = false;   // a fork child's is its parent's until it has its own
  // The kept descriptor only while it is still the output directory (issue
  // 20: a program that dup2'd its own directory over 500..1023 got our
  // placeholder in it); else the directory by its path, for this call.
  const bool kept = kept_directory_intact();
  const int dirfd = kept ? g_dirfd : ::open(g_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
  for (unsigned n = 0;; ++n) {
    format::format_dump_name(g_name, sizeof g_name, program_invocation_short_name, pid, token, n);
    if (dirfd < 0) break;  // no directory to create it in: the dump says why
    if (::faccessat(dirfd, g_name, F_OK, 0) == 0) {
      if (n < 1000) continue;
      break;
    }
    char placeholder[sizeof g_name + 32];
    format::format_temporary_name(placeholder, sizeof placeholder, g_name, pid);
    const int fd = ::openat(dirfd, placeholder, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) {
      ::close(fd);
      g_placeholder_empty = true;
      break;
    }
    if (errno != EEXIST || n >= 1000) break;  // the dump will report a directory it cannot write
  }
  if (!kept && dirfd >= 0) ::close(dirfd);
}

// "profil: DIR/NAME: could not write the profile (ERROR)" on stderr, with
// write(2): the samples must never be lost silently (DESIGN.md §4).
void report_write_error(int error) {
  char line[PATH_MAX + 400];
  size_t n = 0;
  auto append = [&](const char* text) {
    for (; *text != '\0' && n < sizeof line - 2; ++text) line[n++] = *text;
  };
  append("profil: ");
  append(g_dir);
  append("/");
  append(g_name);
  append(": could not write the profile (");
  // strerror is not async-signal-safe: name the errors a dump meets.
  switch (error) {
    case ENOSPC: append("no space left on device"); break;
    case EDQUOT: append("disk quota exceeded"); break;
    case EACCES: append("permission denied"); break;
    case EROFS: append("read-only file system"); break;
    case ENOENT: append("no such directory"); break;
    case EMFILE: case ENFILE: append("too many open files"); break;
    case EIO: append("input/output error"); break;
    case EFBIG: append("file too large"); break;
    // Issue 20: man's seccomp sandbox refused the writes and the line said
    // "errno 38", a number with no name and no hint.
    case ENOSYS: append("ENOSYS: function not implemented; a seccomp sandbox (man's) refuses such calls"); break;
    case EPERM: append("EPERM: operation not permitted; a seccomp sandbox or a security module refuses it"); break;
    default: {
      // strerrorname_np (glibc 2.32) reads a static table: no locale, no
      // allocation. The number too, for an error it does not know.
      if (const char* name = ::strerrorname_np(error)) {
        append(name);
        append(", ");
      }
      char number[24];
      base::format_decimal(static_cast<unsigned long long>(error), number);
      append("errno ");
      append(number);
    }
  }
  append(")\n");
  base::write_all(STDERR_FILENO, line, n);
}

const char* output_directory();

// ASYNC-SIGNAL-SAFE. One ledger record of this image.
bool record_in_ledger(format::profraw::LedgerKind kind, EndReason reason, int signo) {
  format::profraw::LedgerRecord record{};
  std::memcpy(record.magic, format::profraw::kLedgerMagic, sizeof record.magic);
  record.kind = static_cast<uint32_t>(kind);
  record.end_reason = static_cast<uint32_t>(reason);
  record.pid = ::getpid();
  record.ppid = ::getppid();
  record.start_ns = g_start_ns;
  record.cpu_ns = static_cast<uint64_t>(clock_ns(CLOCK_PROCESS_CPUTIME_ID));
  record.clock = clock_code(sampler::active_clock());
  record.start_clock = clock_code(sampler::clock_at_start());
  record.hz = g_hz;
  record.signal = static_cast<uint32_t>(signo);
  const char* name = program_invocation_short_name;
  for (size_t i = 0; name != nullptr && name[i] != '\0' && i + 1 < sizeof record.name; ++i) record.name[i] = name[i];
  return append_ledger_record(output_directory(), g_ledger, record);
}

// Sampling (re)started in a new image (the program's start, a fork
// child): its start goes to the ledger, or, without one, its placeholder
// file is created now (choose_name).
void begin_image() {
  base::ErrnoSaver errno_saver;  // the fork child's errno is the program's
  g_name[0] = '\0';
  g_placeholder_empty = false;
  g_end_in_ledger = false;
  g_in_ledger = g_ledger[0] != '\0' && record_in_ledger(format::profraw::LedgerKind::start, EndReason::exit, 0);
  if (!g_in_ledger) choose_name();
}

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

}  // namespace

// The calling thread's handler stack (sampler/handler_stack.h), which is
// also its alternate signal stack when it has none, so that a stack
// overflow (the commonest crash of deep recursion) still reaches the fault
// guard, which runs on it (SA_ONSTACK), and the profile is written. A
// thread that has one keeps it (a program's own, or a runtime's such as
// Rust's): the handlers move to ours when the kernel puts them there.
void* install_alternate_stack() {
  const sampler::HandlerStack ours = sampler::create_handler_stack();
  if (ours.base == nullptr) return nullptr;
  stack_t current{};
  if (::sigaltstack(nullptr, &current) == 0 && (current.ss_flags & SS_DISABLE)) {
    stack_t stack{};
    stack.ss_sp = ours.base;
    stack.ss_size = sampler::HandlerStack::kBytes;
    ::sigaltstack(&stack, nullptr);
  }
  return ours.base;
}

void remove_alternate_stack(void* memory) {
  if (memory == nullptr) return;
  stack_t current{};
  // Still the alternate stack (the thread may have set its own since):
  // turn it off first; running on it, leave it mapped.
  if (::sigaltstack(nullptr, &current) == 0 && current.ss_sp == memory) {
    if (current.ss_flags & SS_ONSTACK) return;
    stack_t off{};
    off.ss_flags = SS_DISABLE;
    ::sigaltstack(&off, nullptr);
  }
  sampler::release_handler_stack();
}

namespace {

// The output directory kept open, at a number the program is unlikely to
// use (500 and up) and, where the soft descriptor limit is below the hard
// one, at or above the soft limit, where it takes none of the descriptors
// the program may open (issue 20: at `ulimit -n` a program got one fewer
// than plainly). Where neither is possible (a soft limit of a few dozen
// that is also the hard one) nothing is kept: the dumps open the directory
// by its path, so the program still gets all of its descriptors.
void keep_directory() {
  int fd = ::open(g_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  rlimit files{};
  int floor = 500;
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY && files.rlim_cur <= 500) {
    // F_DUPFD honours the soft limit: raised for the one call.
    floor = static_cast<int>(files.rlim_cur);
    base::RaisedFileLimit raised(1);
    const int high = raised.raised() ? ::fcntl(fd, F_DUPFD_CLOEXEC, floor) : -1;
    ::close(fd);
    fd = high;
  } else if (const int high = ::fcntl(fd, F_DUPFD_CLOEXEC, floor); high >= 0) {
    ::close(fd);
    fd = high;
  }
  struct stat st{};
  if (fd < floor || ::fstat(fd, &st) != 0) {
    if (fd >= 0) ::close(fd);
    return;
  }
  g_dirfd = fd;
  g_dir_dev = st.st_dev;
  g_dir_ino = st.st_ino;
  std::memcpy(g_dirfd_path, "/proc/self/fd/", 14);
  base::format_decimal(static_cast<unsigned long long>(fd), g_dirfd_path + 14);
}

// ASYNC-SIGNAL-SAFE. Is the kept descriptor still the output directory
// (a program may dup2 its own files over any number)?
bool kept_directory_intact() {
  struct stat st{};
  return g_dirfd >= 0 && ::fstat(g_dirfd, &st) == 0 && S_ISDIR(st.st_mode) && st.st_dev == g_dir_dev &&
         st.st_ino == g_dir_ino;
}

// ASYNC-SIGNAL-SAFE.
const char* output_directory() { return kept_directory_intact() ? g_dirfd_path : g_dir; }

size_t table_capacity() {
  if (const char* text = ::secure_getenv("PROFIL_TABLE_SIZE")) {
    char* end = nullptr;
    unsigned long value = std::strtoul(text, &end, 10);
    if (end != text && *end == '\0' && value >= 64 && value <= (1ul << 26)) return value;
  }
  return kDefaultTableCapacity;
}

// PROFIL_STACK_DEPTH: the unwinder's depth limit (default 128), read once
// at start (the dump, which may run in a signal handler, uses g_max_depth).
uint32_t unwind_depth() {
  if (const char* text = ::secure_getenv("PROFIL_STACK_DEPTH")) {
    char* end = nullptr;
    unsigned long value = std::strtoul(text, &end, 10);
    if (end != text && *end == '\0' && value >= 1 && value <= sampler::kMaxStackDepth) return static_cast<uint32_t>(value);
  }
  return 0;  // the sampler's default
}

// PROFIL_STACKS_STATS=FILE, for tests and measurements only (not user-facing
// output): one line appended to FILE at exit with how many sampled ticks
// unwound to the outermost frame and how many were truncated. A file, not
// stderr: coreutils close stderr in their exit handlers.
void print_stack_stats() {
  const char* path = ::secure_getenv("PROFIL_STACKS_STATS");
  if (g_stacks == nullptr || path == nullptr || *path == '\0') return;
  uint64_t complete = 0, truncated = 0, distinct = 0, frames = 0, at_limit = 0;
  const uint32_t limit = g_max_depth;
  g_stacks->for_each([&](const uint64_t*, uint32_t depth, bool cut, uint64_t weight) {
    (cut ? truncated : complete) += weight;
    if (cut && depth >= limit) at_limit += weight;
    frames += uint64_t{depth} * weight;
    ++distinct;
  });
  char line[256];
  size_t n = 0;
  auto append = [&](const char* text) {
    for (; *text != '\0' && n < sizeof line - 2; ++text) line[n++] = *text;
  };
  auto number = [&](uint64_t value) {
    char digits[24];
    base::format_decimal(static_cast<unsigned long long>(value), digits);
    append(digits);
  };
  append(program_invocation_short_name);
  append(": complete ");
  number(complete);
  append(" truncated ");
  number(truncated);
  append(" (at the depth limit ");
  number(at_limit);
  append(") distinct ");
  number(distinct);
  append(" frames ");
  number(frames);
  append(" dropped ");
  number(g_stacks->dropped_weight());
  append("\n");
  const int fd = ::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  base::write_all(fd, line, n);
  ::close(fd);
}

void start() {
  g_real_exit = reinterpret_cast<exit_fn>(::dlsym(RTLD_NEXT, "_exit"));
  g_real_Exit = reinterpret_cast<exit_fn>(::dlsym(RTLD_NEXT, "_Exit"));
  g_real_quick_exit = reinterpret_cast<exit_fn>(::dlsym(RTLD_NEXT, "quick_exit"));
  g_real_exit_function = reinterpret_cast<exit_fn>(::dlsym(RTLD_NEXT, "exit"));
  // An image exec'd under a seccomp filter its process installed
  // (exec_hooks.cc): nothing is started, no system call issued.
  if (::getenv("PROFIL_SECCOMP_FILTERED") != nullptr) return;
  // secure_getenv, here and wherever libprofil reads its environment: in a
  // set-user-ID or otherwise AT_SECURE process an ordinary user must not
  // choose where the privileged process writes, nor receive its address
  // layout (issue 11), so no variable is honoured there and the preload
  // runtime stays off (glibc's -pg runtime ignores GMON_OUT_PREFIX there
  // too).
  const char* dir = ::secure_getenv("PROFIL_RUN_DIR");
  if (dir == nullptr || *dir == '\0') return;
  if (std::strlen(dir) >= sizeof g_dir) {
    const char message[] = "profil: PROFIL_RUN_DIR: path too long; not profiling\n";
    base::write_all(STDERR_FILENO, message, sizeof message - 1);
    return;
  }
  // Absolute, so a program that changes directory still writes there.
  char absolute[PATH_MAX];
  std::strcpy(g_dir, ::realpath(dir, absolute) != nullptr ? absolute : dir);
  keep_directory();
  if (const char* run_id = ::secure_getenv("PROFIL_RUN_ID"))
    std::strncpy(g_run_id, run_id, sizeof g_run_id - 1);
  g_table = sampler::PcTable::create(table_capacity());
  if (g_table == nullptr) {
    const char message[] = "profil: cannot map the sample table; not profiling\n";
    base::write_all(STDERR_FILENO, message, sizeof message - 1);
    return;
  }
  g_owner_pid.store(::getpid(), std::memory_order_relaxed);
  if (const char* token = run_token()) format::format_ledger_name(g_ledger, sizeof g_ledger, token);
  ensure_process_hooks();
  // Registered after the sampler's: its child handler re-arms the clocks
  // first, then this one empties the table.
  pthread_atfork(nullptr, nullptr, on_fork_child);
  g_active = true;
  at_process_end(on_process_end);
  install_crash_handlers();
  install_alternate_stack();
  mark_sampling_start();
  begin_image();
  // PROFIL_CHECKPOINTS=0 turns the checkpoints off: only for measuring what
  // they cost (bench/run_process.sh); a process then keeps nothing when it
  // ends without a final dump.
  read_snapshot_request_setting();
  if (base::flag_from_environment("PROFIL_CHECKPOINTS", ::secure_getenv("PROFIL_CHECKPOINTS"), true))
    sampler::set_periodic_hook(on_periodic);
  if (base::flag_from_environment("PROFIL_STACKS", ::secure_getenv("PROFIL_STACKS"), false)) {
    g_stacks = unwind::StackTable::create(kStackTableStacks, kStackTableFrames);
    g_max_depth = unwind_depth() != 0 ? unwind_depth() : unwind::kDefaultMaxDepth;
    if (g_stacks != nullptr) sampler::set_stack_table(g_stacks, g_max_depth);
  }
  sampler::set_pc_table(g_table);
  g_cpu_at_clocks = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
  g_hz = sampler::active_hz();
}

// Default priority, not an early one: the sampler's own globals must be
// initialized first (src/CMakeLists.txt links sampler/ before runtime/, and
// the loader runs libprofil's initializers, in that order, before the
// program's, so the program's static constructors are sampled too).
__attribute__((constructor)) void preload_constructor() { start(); }

// exit() and return from main: libprofil's destructors run after the
// program's own atexit handlers and destructors (it was loaded first).
__attribute__((destructor)) void preload_destructor() {
  preload_dump(EndReason::exit, 0);
  if (g_active && ::getpid() == g_owner_pid.load(std::memory_order_relaxed)) print_stack_stats();
}

}  // namespace

bool preload_active() { return g_active; }

unwind::StackTable* preload_stack_table() { return g_stacks; }

bool process_has_other_threads() {
  // proc(5): after "pid (comm) ", field 3 is the state and field 20
  // num_threads; comm may hold spaces and parentheses, so count from the
  // last ')'.
  int fd = ::open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return true;  // cannot tell: the safe answer
  char text[1024];
  ssize_t n;
  do {
    n = ::read(fd, text, sizeof text - 1);
  } while (n < 0 && errno == EINTR);
  ::close(fd);
  if (n <= 0) return true;
  text[n] = '\0';
  const char* p = std::strrchr(text, ')');
  if (p == nullptr) return true;
  int field = 2;
  for (++p; *p != '\0' && field < 20; ++p)
    if (*p == ' ') ++field;
  long threads = 0;
  for (; *p >= '0' && *p <= '9'; ++p) threads = threads * 10 + (*p - '0');
  return threads != 1;
}

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
  void for_each_stack(StackVisitor& visitor) const override {
    table_->for_each([&visitor](const uint64_t* pcs, uint32_t depth, bool truncated, uint64_t weight) {
      visitor.visit(pcs, depth, truncated, weight);
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
  if (!ok && kind != DumpKind::checkpoint) report_write_error(errno);
  end_dump(kind);
  return ok;
}

void preload_before_exec() {
  if (!g_active) return;
  preload_dump(EndReason::exec, 0);
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

using profiling::runtime::g_real_exit;
using profiling::runtime::g_real_exit_function;
using profiling::runtime::g_real_Exit;
using profiling::runtime::g_real_quick_exit;

// _exit() and _Exit() end the process without exit handlers: interposed so
// the profile is written first. glibc's own exit() reaches _exit through an
// internal call, not this symbol (and the dump is once-only anyway).
extern "C" PROFIL_EXPORT void _exit(int status) {
  profiling::runtime::run_process_end_hooks(profiling::runtime::ProcessEnd::exit_call, 0);
  if (g_real_exit != nullptr) g_real_exit(status);
  for (;;) ::syscall(SYS_exit_group, status);
}

extern "C" PROFIL_EXPORT void _Exit(int status) {
  profiling::runtime::run_process_end_hooks(profiling::runtime::ProcessEnd::exit_call, 0);
  if (g_real_Exit != nullptr) g_real_Exit(status);
  for (;;) ::syscall(SYS_exit_group, status);
}

// quick_exit() reaches _exit inside glibc, past the interposed symbol, so
// it is interposed itself. The profile is written before the program's
// at_quick_exit handlers run (they are for flushing, not work).
extern "C" PROFIL_EXPORT void quick_exit(int status) noexcept {
  profiling::runtime::run_process_end_hooks(profiling::runtime::ProcessEnd::exit_call, 0);
  if (g_real_quick_exit != nullptr) g_real_quick_exit(status);
  for (;;) ::syscall(SYS_exit_group, status);
}

// exit() from a thread while others run: glibc runs the exit handlers (our
// destructor's dump among them) in whichever thread gets them, and any
// thread that finishes exit() first ends the process with exit_group,
// killing a dump still being written in another (issue 11: 9 threads calling
// exit at once lost the profile 15 times in 15). So a multithreaded
// process first writes a complete provisional dump here, before any exit
// handler runs; the destructor's dump then rewrites it with what the exit
// handlers ran too (renamed over it, so a rewrite cut short leaves the
// provisional file whole). return from main reaches exit inside glibc, not
// this symbol, and keeps the single dump. ASYNC-SIGNAL-SAFE as far as the
// dump goes (exit itself is not).
extern "C" PROFIL_EXPORT void exit(int status) {
  if (profiling::runtime::preload_active() && profiling::runtime::process_has_other_threads())
    profiling::runtime::preload_dump(profiling::format::profraw::EndReason::exit, 0,
                                     profiling::runtime::DumpKind::provisional);
  if (g_real_exit_function != nullptr) g_real_exit_function(status);
  for (;;) ::syscall(SYS_exit_group, status);
}
