// The preload runtime (preload.h): start-up. The constructor reads the
// environment (PROFIL_RUN_DIR, PROFIL_RUN_ID, PROFIL_TABLE_SIZE,
// PROFIL_STACKS, PROFIL_STACK_DEPTH, PROFIL_CHECKPOINTS, PROFIL_SNAPSHOTS),
// maps the tables, keeps the output directory, registers the fork,
// process-end and crash hooks and starts sampling; the destructor writes
// the dump at exit. The handler stack each thread gets
// (install_alternate_stack) is here too.
// The other jobs are in their own files, their shared state in
// internal/preload_state.h: the run directory and its names
// (run_directory.cc), the dump and checkpoints (preload_dump.cc), fork and
// exec (preload_fork_exec.cc), the exit interposers (preload_exit.cc).
//
// NOT async-signal-safe: this runs at load and at exit, before and after
// the sampling signal can reach any of it (print_stack_stats, for tests,
// reads a file name from the environment).
#include "runtime/preload.h"

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "base/io.h"
#include "base/settings.h"
#include "format/run_names.h"
#include "runtime/internal/preload_state.h"
#include "runtime/process_end.h"
#include "runtime/process_hooks.h"
#include "runtime/python_inside.h"
#include "runtime/ruby_inside.h"
#include "runtime/snapshot_request.h"
#include "sampler/handler_stack.h"
#include "sampler/sampler.h"
#include "sampler/wall_sampler.h"
#include "unwind/stack_table.h"
#include "unwind/unwinder.h"

namespace profiling::runtime {

using namespace internal;

namespace {

using format::profraw::EndReason;

// Room for the distinct sampled PCs of one process: 16 bytes each, mapped
// once (1 MiB; untouched pages cost nothing, but a fork child clears the
// whole table). A minute of a large program at 500 Hz samples some ten
// thousand distinct PCs; what does not fit is counted in the header's
// dropped field and reported. PROFIL_TABLE_SIZE overrides.
constexpr size_t kDefaultTableCapacity = size_t{1} << 16;

// Whole stacks (PROFIL_STACKS=1, issue 13): distinct stacks and the frames
// they hold, mapped once; untouched pages cost nothing. 64 Ki stacks of 16
// frames on average fit; what does not is counted as dropped.
constexpr size_t kStackTableStacks = size_t{1} << 16;
constexpr size_t kStackTableFrames = size_t{1} << 20;
// A CPython process's stacks hold its Python frames too (two words each,
// python_inside.h), and distinct instructions make distinct stacks.
constexpr size_t kStackTableFramesPython = size_t{1} << 23;

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
// unwound to the outermost frame and how many were truncated (and, on the
// wall clock, what its watcher did). A file, not
// stderr: coreutils close stderr in their exit handlers.
void print_stack_stats() {
  const char* path = ::secure_getenv("PROFIL_STACKS_STATS");
  if (g_stacks == nullptr || path == nullptr || *path == '\0') return;
  uint64_t complete = 0, truncated = 0, distinct = 0, frames = 0, at_limit = 0;
  const uint32_t limit = g_max_depth;
  g_stacks->for_each([&](const uint64_t*, uint32_t depth, bool cut, uint64_t weight, int32_t) {
    (cut ? truncated : complete) += weight;
    if (cut && depth >= limit) at_limit += weight;
    frames += uint64_t{depth} * weight;
    ++distinct;
  });
  char line[512];
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
  // The wall clock's watcher (sampler/wall_sampler.h): the blocked threads
  // it walked, the walks it threw away (the thread woke meanwhile) and its
  // CPU time per wake-up.
  if (const sampler::WallCounts wall = sampler::wall_counts(); wall.rounds != 0) {
    append(" wall_rounds ");
    number(wall.rounds);
    append(" wall_blocked ");
    number(wall.blocked);
    append(" wall_walked ");
    number(wall.walked);
    append(" wall_woke ");
    number(wall.woke_during_walk);
    append(" wall_watcher_ns ");
    number(wall.watcher_cpu_ns);
  }
  append("\n");
  const int fd = ::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  base::write_all(fd, line, n);
  ::close(fd);
}

void start() {
  find_real_exits();
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
  keep_program_name();
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
    // Before the table and the clocks: a CPython process wants a bigger
    // table and its frames read on the sampled thread.
    const bool interpreter = start_python_frames() || start_ruby_frames();
    g_stacks =
        unwind::StackTable::create(kStackTableStacks, interpreter ? kStackTableFramesPython : kStackTableFrames);
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

}  // namespace profiling::runtime
