// The in-memory profile every reader produces and every writer and report
// consumes: raw sampled addresses with counts, plus the mappings that say which
// object each address belongs to. Symbolizing is the report layer's job; the
// names a file already carries (pprof's Function/Line tables) are kept beside
// the samples because the objects may be gone when the file is read.
#ifndef PROFIL_FORMAT_PROFILE_H
#define PROFIL_FORMAT_PROFILE_H

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "format/stack_table.h"

namespace profiling::format {

// One loaded object's executable range in the profiled process.
struct Mapping {
  uint64_t start = 0;        // first address of the range (runtime)
  uint64_t limit = 0;        // one past the last address
  uint64_t file_offset = 0;  // offset in the file that start maps to
  std::string path;          // object path as the process saw it
  std::string build_id;      // lowercase hex, empty when unknown
  // The file's frames for this range are all its writer's objects could
  // give: every name, and the lines and inline frames of the DWARF the
  // writer read for it (pprof has_functions and has_inline_frames, which
  // profil's writer sets on every mapping whose DWARF it read, inlined
  // code found or not). `profil report` then reads the names from the file
  // as pprof does instead of symbolizing again (report/symbolizer.h).
  bool symbolized = false;

  bool contains(uint64_t address) const { return address >= start && address < limit; }
  friend bool operator==(const Mapping&, const Mapping&) = default;
};

// A sampled program counter, the stack it was sampled in, the thread, and
// how many samples (weighted ticks) it received, in how many observations.
// 40 bytes: 24 before threads (issue 22), whose 4 bytes round to 8 with the
// alignment of the counts, and 8 for the observations (issue 22); a flat
// profile of millions of addresses costs two thirds more than it did.
struct Sample {
  uint64_t address = 0;  // runtime address: the leaf
  uint64_t count = 0;
  // The process it was taken in, in a profile that holds several (pprof
  // label "pid"; `profil run` gathers its small processes so); 0 otherwise.
  // Linux pids fit 32 bits (pid_max is at most 2^22, proc(5)).
  int32_t pid = 0;
  // Its callers: an id in Profile::stacks; 0 (kNoCallers) when none are
  // known, a stack of depth 1 (every profile without stacks).
  uint32_t stack = 0;
  // The thread it was taken in (pprof label "thread_id"; its name is in
  // Profile::thread_names); 0 when unknown (files before issue 22, gmon,
  // --no-stacks from inside). Linux tids are pids (pid_max <= 2^22).
  int32_t tid = 0;
  // Whether a CPython thread held the GIL in it (issue 31; pprof label
  // "gil" = held|released): kGilUnknown where the version does not tell
  // and for every other thread. Samples differing only in it stay apart.
  uint8_t gil = 0;
  uint8_t reserved[3] = {};  // padding, kept 0 so that samples compare whole
  // The draws behind count: signals handled or ring records read (pprof
  // sample type "observations/count"). A CPU-time timer's signal stands for
  // 1 + its overrun periods (above the kernel tick, at 4 kHz on a 250 Hz
  // kernel, 16), and a wall-clock wake-up for the periods since the last:
  // count is the time, observations the sampling noise's n (issue 22's
  // honest intervals). 0 when the file did not record them
  // (Profile::has_observations false) and for rows no sample observed
  // (the [unsampled: ...] CPU time, measured rather than sampled).
  uint64_t observations = 0;
  friend bool operator==(const Sample&, const Sample&) = default;
};
static_assert(sizeof(Sample) == 40, "a sample is 40 bytes");
// Sample::gil and TimedSample::gil.
inline constexpr uint8_t kGilUnknown = 0, kGilHeld = 1, kGilReleased = 2;
// The pprof label: "gil" = "held" | "released" (none where unknown).
inline constexpr const char* kGilLabel = "gil";

// A profile's timeline (issue 33): each sample as it was taken, with its
// time, in time order, beside the summed samples, so that a view can show
// what ran when in each thread (speedscope's time order, the HTML page's
// flame charts). Only the outside sampler records times (each perf record
// carries PERF_SAMPLE_TIME); a profile without (inside dumps, gmon, older
// files) has an empty timeline, and its views say so. It keeps its own
// chains, so that what renumbers or drops the profile's (canonicalize_stacks,
// the own samples set apart) leaves it whole; what changes what a stack
// reads (an interpreter view, a merge's relocation) applies to both.
// Memory: 40 bytes a sample taken, and its chains again.
struct TimedSample {
  int64_t time_ns = 0;   // when: Unix epoch ns, so that files of one run merge in order
  uint64_t address = 0;  // its leaf, as Sample::address
  // What it adds to its Sample's count: 1 for a perf record, the periods
  // of a wall-clock look.
  uint64_t weight = 0;
  uint32_t stack = 0;  // its callers: an id in Timeline::stacks
  int32_t tid = 0;
  int32_t pid = 0;     // as Sample::pid
  uint8_t gil = 0;     // as Sample::gil
  uint8_t reserved[3] = {};
  friend bool operator==(const TimedSample&, const TimedSample&) = default;
};
static_assert(sizeof(TimedSample) == 40, "a timed sample is 40 bytes");

struct Timeline {
  StackTable stacks;
  std::vector<TimedSample> samples;  // in time order once sort_by_time ran
  bool empty() const { return samples.empty(); }
  void sort_by_time();  // stable: samples of one time keep their order
  friend bool operator==(const Timeline&, const Timeline&) = default;
};

// One source-level frame at an address: the function and, when known, the
// source line. An address of inlined code has several, innermost first.
struct Frame {
  std::string function;     // display name (demangled), empty when unknown
  std::string system_name;  // linker name (mangled)
  std::string file;
  int64_t line = 0;         // 0: unknown
  friend bool operator==(const Frame&, const Frame&) = default;
};

// Where a profile puts CPU time no sample caught (named by its frames, e.g.
// "[unsampled: signals blocked]"): non-canonical x86-64 addresses, which no
// program counter can hold, so they never meet a sampled one.
inline constexpr uint64_t kUnsampledAddressBase = 0x8000'0000'0000'0000;
inline constexpr uint64_t unsampled_address(uint32_t cause) { return kUnsampledAddressBase + cause; }

// Where a profile puts pprof locations that have no address (producers
// that name frames only by function and line: Java, Python, and others):
// each its own non-canonical address, so frames of different functions
// never share one.
inline constexpr uint64_t kAddresslessBase = 0xC000'0000'0000'0000;

// Where a profile puts the frames of an interpreted language (a Python
// function at one of its lines, issue 31): each (code, line) its own
// non-canonical address, named in Profile::frames (function, file, line),
// placed in the stack just inside the native frame of the interpreter's
// evaluation loop that ran it. Their object in reports is "[python]";
// from kRubyFrameBase on they are a Ruby method's, "[ruby]" (issue 34).
inline constexpr uint64_t kInterpreterFrameBase = 0xA000'0000'0000'0000;
inline constexpr uint64_t kRubyFrameBase = 0xA800'0000'0000'0000;
inline constexpr uint64_t kInterpreterFrameLimit = 0xB000'0000'0000'0000;
inline constexpr bool is_interpreter_frame(uint64_t address) {
  return address >= kInterpreterFrameBase && address < kInterpreterFrameLimit;
}
inline constexpr const char* kPythonObject = "[python]";
inline constexpr const char* kRubyObject = "[ruby]";
// The object of an interpreter frame's address.
inline constexpr const char* interpreter_object(uint64_t address) {
  return address >= kRubyFrameBase ? kRubyObject : kPythonObject;
}

// Where a profile sampled from outside puts the samples taken while the
// thread was in the kernel (their user stack above it): a non-canonical
// address below the unsampled ones, named "[kernel]" in the profile's
// frames; its own object in reports.
inline constexpr uint64_t kKernelAddress = 0x0000'9000'0000'0000;
inline constexpr const char* kKernelFrame = "[kernel]";

// The root frame a truncated stack shows (folded output) and is written
// with (pprof: a location without mapping or address, named so).
inline constexpr const char* kTruncatedFrame = "[truncated]";

// a += b, staying at 2^64-1 instead of wrapping; true when it saturated.
// Counts summed from several profiles can exceed 64 bits (issue 11).
inline bool saturating_add(uint64_t& a, uint64_t b) {
  if (!__builtin_add_overflow(a, b, &a)) return false;
  a = UINT64_MAX;
  return true;
}

// Sorts samples by address (then pid, then thread, then stack) and sums
// those at one address, pid, thread and stack into one, counts and
// observations (saturating; true when a sum of counts did). In
// place: no second copy of a large profile.
bool coalesce_samples(std::vector<Sample>* samples);

struct Profile;
// Renumbers the stacks in the order the samples (sorted by address, pid,
// thread, stack) first name them, drops chains no sample names, and sorts again:
// a profile read from any file order is then one representation, so a
// profile written and read back equals itself.
void canonicalize_stacks(Profile* profile);

// A program of a profile that sums several processes, and how many of its
// processes the sum holds.
struct ProgramProcesses {
  std::string program;  // its path, as the processes' profiles named it ("" unknown)
  uint64_t processes = 0;
  // The profiles those processes came in, where some came in several
  // (the snapshots of --every, summed: "4 snapshots of 1 process"); 0 when
  // each came in one. Not kept in a file: a sum read back counts processes.
  uint64_t snapshots = 0;
  friend bool operator==(const ProgramProcesses&, const ProgramProcesses&) = default;
};

// What a sum of several processes holds, for a reader: "python3.11 (3
// processes), sh (1)", "spin (4 snapshots of 1 process)", most processes first, the programs by file name
// (their paths where two share one), the first ten and then how many more.
std::string describe_programs(const std::vector<ProgramProcesses>& programs);

struct Profile {
  // The main executable's path, when known; in a sum of several processes
  // (programs not empty), describe_programs(programs), what a summary shows.
  std::string program;
  int64_t pid = 0;
  std::string clock;          // "cpu", "perf", "wall", or "" when unknown
  uint64_t period_ns = 0;     // CPU time one count stands for (1e9 / hz); 0 for an event
  // The event sampled, when not time (issue 33, --event): perf's name
  // ("page-faults", "cycles"), each count standing for event_period of
  // them, never for seconds. "" with event_period 0: time, as clock says.
  // pprof carries it as the period type (NAME/count) and a
  // "profil.event=NAME" comment.
  std::string event;
  uint64_t event_period = 0;
  uint64_t duration_ns = 0;   // wall time the profile covers, 0 when unknown
  int64_t time_nanos = 0;     // when the profile started (Unix epoch ns)
  // When the process (its present image) began, Unix epoch ns; 0 when
  // unknown. Earlier than time_nanos for an attach or a later snapshot. In
  // memory only: it tells a file the process wrote from one left by an
  // earlier process of the same pid (report/jit_map.h).
  int64_t process_start_ns = 0;
  uint64_t dropped = 0;       // samples the sampler could not store
  // Weighted samples taken in profil's own code (libprofil.so: its signal
  // handler, its dump at exit), set apart from samples by
  // report::set_apart_own_samples: profil's cost, not the program's rows. pprof
  // carries it as a "profil.own_samples=N" comment.
  uint64_t own_samples = 0;
  std::vector<Mapping> mappings;  // the main executable first, when known
  std::vector<Sample> samples;
  StackTable stacks;  // the samples' callers
  // Weighted samples whose stack could not be stored (the sampler's stack
  // table was full): counted in samples as leaves of unknown callers.
  uint64_t stacks_dropped = 0;
  // Sampled runtime address (leaf or caller) -> the frames the file named it
  // with; only pprof carries them, and only for addresses its writer could
  // symbolize.
  std::map<uint64_t, std::vector<Frame>> frames;
  // Of a sum of several processes (report::ProfileMerger), each program
  // and how many processes ran it, in the order first met; empty in the
  // profile of one process. pprof carries it as "profil.processes=N PATH"
  // comments.
  std::vector<ProgramProcesses> programs;
  // Thread id -> the thread's name (its comm, as prctl(PR_SET_NAME) or
  // pthread_setname_np(3) last set it while sampled; "[ended]" for a thread
  // of the inside sampler that ended before anything read its name). Only
  // threads that samples name. pprof carries it as each sample's
  // "thread_name" label.
  std::map<int32_t, std::string> thread_names;

  // The samples' observations were recorded (Sample::observations): profraw
  // version 5, pprof with an "observations" sample type, the outside
  // sampler (one ring record, one count). false: files before issue 22,
  // gmon, and sums of such files with others; intervals then treat each
  // count as one draw, as they did.
  bool has_observations = false;
  // Each sample with its time, when the source recorded them (empty else).
  Timeline timeline;

  uint64_t total_count() const;  // saturates at 2^64-1
  uint64_t total_observations() const;  // saturates at 2^64-1; 0 without observations
  // Whether any sample has callers (or a truncated stack).
  bool has_stacks() const { return !stacks.empty(); }
  // The mapping holding address, or nullptr.
  const Mapping* mapping_for(uint64_t address) const;
  // The frames the file named address with, or nullptr.
  const std::vector<Frame>* frames_for(uint64_t address) const;
  friend bool operator==(const Profile&, const Profile&) = default;
};

}  // namespace profiling::format

#endif  // PROFIL_FORMAT_PROFILE_H
