// The bytes of the raw dump a profiled process writes at exit
// (`<progname>.<pid>.profraw`, docs/formats/profraw.md) and of the run's
// process ledger: the header, record and ledger layouts and their
// constants. The writer is the preload runtime, from a signal handler
// (src/runtime/profraw_writer.cc), so the layout is flat and little-endian,
// written with write(2) alone; the reader is profraw.h.
//
// Nothing in this header allocates or has code beyond constants: the
// async-signal-safe writer and the reader share it.
#ifndef PROFIL_FORMAT_PROFRAW_LAYOUT_H
#define PROFIL_FORMAT_PROFRAW_LAYOUT_H

#include <cstddef>
#include <cstdint>

namespace profiling::format {

namespace profraw {

inline constexpr char kMagic[8] = {'P', 'R', 'O', 'F', 'R', 'A', 'W', '\n'};
// Version 7 added the GIL's state to a stack record's flags (issue 31,
// kStackGilMask: read inside at the sample); its header is version 6's.
// Version 6 added interpreter frames (issue 31, Python frames read inside
// the program at the sample): the stacks may hold kInterpreterFrameBase
// addresses (format/profile.h), named by the InterpreterFrameRecords after
// the threads. Version 5 added observations (issue 22's honest intervals): each pair's
// and each stack record's signals (or ring records) beside its weighted
// count; version 4 threads (issue 22): each stack record's thread id and
// the thread records after the stacks; version 3 the stacks (issue 13);
// version 2 the unsampled records and start_clock. Version 1 (176-byte
// header, no records), 2 (184-byte header, no stacks) and 3 (216-byte
// header, 16-byte stack records, no threads) and 4 (16-byte pairs, no
// observations: read with Profile::has_observations false) files still read.
inline constexpr uint32_t kVersion = 7;
inline constexpr uint32_t kHeaderSizeV1 = 176;
inline constexpr uint32_t kHeaderSizeV2 = 184;
inline constexpr uint32_t kHeaderSizeV3 = 216;
inline constexpr uint32_t kHeaderSizeV5 = 224;  // versions 4 and 5
// The deepest stack a file may hold; the unwinder's limit (128 by default)
// is far below.
inline constexpr uint32_t kMaxStackDepth = 4096;
// profil run's run id ends in "-<token>", which the preload runtime also
// puts in its dump's name (format/run_names.h): the run opens only files so
// named (issue 11).
inline constexpr size_t kRunIdSize = 56;

// How the process ended, as the writer saw it.
enum class EndReason : uint32_t {
  exit = 1,    // exit() or return from main: atexit/destructor
  quick = 2,   // _exit() / _Exit()
  signal = 3,  // a terminating or crash signal (signal field says which)
  exec = 4,    // replaced by exec: what the old image sampled
  // The last checkpoint the process wrote while running: it ended without
  // a final dump (a raw exit_group system call, as Go programs end, or
  // SIGKILL), so the profile stops at the checkpoint.
  checkpoint = 5,
  // The program installed a seccomp filter that would refuse what the
  // preload runtime still does (runtime/seccomp_filter.h): the runtime
  // stepped aside there, and the process ran on unsampled.
  filtered = 6,
};
// A header's or a ledger record's end_reason field names one of the above.
inline constexpr bool is_end_reason(uint32_t value) {
  return value >= static_cast<uint32_t>(EndReason::exit) && value <= static_cast<uint32_t>(EndReason::filtered);
}

// Offsets of the header fields (all little-endian, naturally aligned).
// The header is followed by program_length bytes of path, sample_count
// 24-byte (pc, count, observations) pairs (16-byte (pc, count) before
// version 5), maps_length bytes of /proc/self/maps,
// unsampled_count 48-byte Unsampled records, stack_count stack records
// (StackRecord and its PCs) of stacks_length bytes in all, and
// thread_count 24-byte ThreadRecords, and interp_frame_count
// InterpreterFrameRecords (each with its strings) of interp_frames_length
// bytes; the file is exactly that long (a shorter one is truncated).
struct Header {
  char magic[8];
  uint32_t version;
  uint32_t header_size;
  int64_t pid;
  int64_t ppid;
  uint32_t clock;  // 0 cpu (POSIX CPU-time timers), 1 perf (task-clock ring), 2 wall, 3 perf-signal
  uint32_t hz;
  uint64_t period_ns;  // CPU time one count stands for
  int64_t start_ns;    // CLOCK_REALTIME when sampling started
  int64_t end_ns;      // CLOCK_REALTIME at the dump
  uint64_t dropped;    // weighted ticks the pc table had no room for
  uint32_t end_reason; // EndReason
  uint32_t signal;     // the signal, for EndReason::signal
  uint64_t sample_count;
  uint32_t program_length;
  uint32_t reserved;
  uint64_t maps_length;
  uint64_t cpu_ns;   // CLOCK_PROCESS_CPUTIME_ID at the dump
  uint64_t signals;  // sampling signals handled (each count is weighted by 1 + overrun)
  char run_id[kRunIdSize];  // PROFIL_RUN_ID, NUL-padded
  // Version 2:
  uint32_t unsampled_count;  // Unsampled records after the maps
  uint32_t start_clock;      // the clock sampling started with (clock is the one at the end)
  // Version 3:
  uint64_t stack_count;     // stack records after the unsampled records
  uint64_t stacks_length;   // their bytes
  uint64_t stacks_dropped;  // weighted ticks the stack table had no room for
  uint32_t stack_flags;     // kStacksCaptured: stacks were on
  uint32_t max_depth;       // the unwinder's depth limit (0 unknown)
  // Version 4:
  uint32_t thread_count;    // ThreadRecords after the stacks
  uint32_t thread_flags;    // 0 (reserved)
  // Version 6:
  uint64_t interp_frame_count;    // InterpreterFrameRecords after the threads
  uint64_t interp_frames_length;  // their bytes, strings and padding included
};
static_assert(sizeof(Header) == 240, "the profraw header is 240 bytes");
static_assert(offsetof(Header, interp_frame_count) == kHeaderSizeV5);
static_assert(offsetof(Header, stack_count) == kHeaderSizeV2);
static_assert(offsetof(Header, thread_count) == kHeaderSizeV3);

inline constexpr uint32_t kStacksCaptured = 1;

// One sampled stack: depth PCs (uint64 each) follow, the leaf first (the
// sampled PC), then each caller's return address as found on the stack.
// weight counts the samples (weighted ticks) of the stack, taken in thread
// tid (version 4; a version 3 record is the first 16 bytes, no thread) in
// `observations` signals or ring records (version 5; 0 before). 32 bits,
// as the sampler's stack table keeps them: one stack of one thread would
// need 2^32 signals, 12 days of its CPU time at 4 kHz, to wrap.
struct StackRecord {
  uint32_t depth;  // 1..kMaxStackDepth
  uint32_t flags;  // kStackTruncated
  uint64_t weight;
  int32_t tid;            // 0: unknown
  uint32_t observations;  // version 5; reserved (0) in version 4
};
static_assert(sizeof(StackRecord) == 24);
inline constexpr uint32_t kStackRecordSizeV3 = 16;
inline constexpr uint32_t kStackTruncated = 1;  // the unwind stopped before the outermost frame
// Version 7 (issue 31): bits 1-2 say whether the thread held CPython's GIL
// in the stack's samples, format::kGil* (1 held, 2 released; 0 unknown, and
// in every older file): samples that differ in it are records apart.
inline constexpr uint32_t kStackGilShift = 1;
inline constexpr uint32_t kStackGilMask = 3u << kStackGilShift;

// A thread the stacks name, and its name (its comm: at most 15 bytes,
// NUL-padded) read at the dump, or when the thread ended; kThreadEnded
// with an empty name: it ended before the dump and nothing read its name.
struct ThreadRecord {
  int32_t tid;
  uint32_t flags;  // kThreadEnded
  char name[16];
};
static_assert(sizeof(ThreadRecord) == 24);
inline constexpr uint32_t kThreadEnded = 1;
// What a report calls a thread whose name was never read.
inline constexpr const char* kEndedThreadName = "[ended]";

// The name of one interpreter frame address the stacks hold (a Python
// function at one of its lines, or the mark of a sample whose Python frames
// did not fit its native stack): function_length bytes of its (qualified)
// name, then file_length bytes of its file, then zero bytes up to a
// multiple of 8. line 0: unknown.
struct InterpreterFrameRecord {
  uint64_t address;  // kInterpreterFrameBase + n
  int64_t line;
  uint32_t function_length;
  uint32_t file_length;
};
static_assert(sizeof(InterpreterFrameRecord) == 24);
inline constexpr uint32_t kMaxInterpreterName = 1 << 16;  // longer strings are cut

// Why CPU time went unsampled (the sampler's UnsampledCause).
enum class UnsampledCause : uint32_t {
  signals_blocked = 1,    // the thread blocked the sampling signal
  descriptor_closed = 2,  // the program closed the thread's perf counter
  unknown = 3,            // neither; or threads no clock measured
  between_ticks = 4,      // a CPU-time timer the kernel had not checked since (cpu clock)
  ring_full = 5,          // the perf ring buffer was full (PERF_RECORD_LOST)
  in_kernel = 6,          // a perf clock: in the kernel since the thread's last sample (user mode is sampled)
  // From outside: an ended thread's CPU time as the kernel counted it at
  // its exit (PERF_RECORD_READ), less what its samples took: the part of a
  // period after its last sample (all of a process shorter than a
  // period), and what the kernel's sampling missed (a process that forks
  // and waits many times: the kernel swaps the parent's and child's event
  // contexts at each switch between them, perf_event_context_sched_out).
  ended_within_period = 7,
};

// CPU time of some threads that no sample caught, beyond the noise.
struct Unsampled {
  uint32_t cause;    // UnsampledCause
  uint32_t threads;  // how many threads (0: measured process-wide only)
  uint64_t cpu_ns;
  int32_t tids[8];   // the first threads' ids, 0-padded
};
static_assert(sizeof(Unsampled) == 48);

struct Pair {
  uint64_t pc;
  uint64_t count;
  uint64_t observations = 0;  // version 5: the signals or ring records behind count
};
static_assert(sizeof(Pair) == 24);
inline constexpr uint32_t kPairSizeV4 = 16;  // versions 1-4: (pc, count)

// The run's process ledger (issue 12): "processes.run-<token>.ledger"
// (format/run_names.h) in the run's directory, created empty by profil run
// before the program starts and appended to by every profiled process of
// the run, one 128-byte record per write (O_APPEND: the kernel appends each write
// whole). A process records its start there, and, when it ends without a
// sample (most processes of a shell script or a build), its end; only a
// process with samples writes a profraw of its own. A file per process
// cost ~0.5-0.9 ms on ext4 (creating an inode searches past every inode
// freed in the last seconds), more than the rest of its profiling. A
// process whose start has neither an end record nor a dump started
// profiling and wrote nothing (the empty placeholder of a process that
// cannot append to the ledger says the same).
inline constexpr char kLedgerMagic[8] = {'P', 'R', 'L', 'E', 'D', 'G', 'R', '1'};

enum class LedgerKind : uint32_t {
  start = 1,  // sampling started (a program's start, a fork child, an exec'd image)
  end = 2,    // ended with nothing sampled: no profraw follows
  // The process is about to exec a program the preload cannot enter
  // (end_reason: NotEntered; name: the program's file name).
  not_entered = 3,
  // The image's final dump could not be written (end_reason: the dump's
  // EndReason; signal: the errno): a refused write, not a kill or a raw
  // exit_group (issue 32).
  unwritten = 4,
};

// Why an exec'd program will not be profiled from inside (issue 20).
enum class NotEntered : uint32_t {
  static_program = 1,  // no PT_INTERP: no dynamic loader to preload into
  set_id = 2,          // set-user-ID or set-group-ID: secure execution ignores LD_PRELOAD
  capabilities = 3,    // file capabilities: secure execution too
  no_preload = 4,      // the environment it is given has no LD_PRELOAD of libprofil (sudo, env -i)
  seccomp_filter = 5,  // the program installed a seccomp filter, which the new image inherits
};

struct LedgerRecord {
  char magic[8];
  uint32_t kind;        // LedgerKind
  uint32_t end_reason;  // EndReason (end records)
  int64_t pid;
  int64_t ppid;
  // With pid, names one sampled image: a profraw's header start_ns is the
  // same for the same image.
  int64_t start_ns;
  uint64_t cpu_ns;  // CLOCK_PROCESS_CPUTIME_ID at the end
  uint32_t clock;   // as the profraw header's
  uint32_t hz;
  uint32_t signal;  // for EndReason::signal
  uint32_t start_clock;
  char name[64];    // program_invocation_short_name, NUL-padded
};
static_assert(sizeof(LedgerRecord) == 128, "a ledger record is 128 bytes");

}  // namespace profraw

}  // namespace profiling::format

#endif  // PROFIL_FORMAT_PROFRAW_LAYOUT_H
