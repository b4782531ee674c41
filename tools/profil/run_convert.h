// The conversion of a run's profiles into the files a user reads: a pprof
// file per process that used real CPU, one shared by the short ones (a
// 2-sample profile says nothing alone, docs/run.md "Output"), gmon.out on
// request. Kept apart from where the profiles come from (the run
// directory's dumps, run_dumps.h) so that every source goes through the
// same sinks (issue 21).
#ifndef PROFIL_TOOLS_RUN_CONVERT_H
#define PROFIL_TOOLS_RUN_CONVERT_H

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "format/profraw.h"

namespace profiling::cli {

// A process whose samples stand for at least this much CPU keeps a file of
// its own; the others of the run share one (docs/run.md, "Output").
inline constexpr uint64_t kOwnFileCpuNs = 10'000'000;

// What became of one process of the run (one dump). Every line about a
// process is printed from this record (run_print.h).
struct ProcessSummary {
  std::string label;  // "bash (pid 12)"
  // The image's file stem, "<prog>.<pid>[.<n>]" without a snapshot's
  // ".s<k>": an exec'd image of the same name and pid has another (<n>),
  // every snapshot of one image the same.
  std::string image_stem;
  int64_t pid = 0;
  uint64_t samples = 0;
  uint64_t period_ns = 0;
  std::string clock;
  // Another event than CPU time (format::Profile::event, issue 33): its
  // samples stand for event_period events each; period_ns is 0.
  std::string event;
  uint64_t event_period = 0;
  uint32_t hz = 0;
  uint64_t dropped = 0;
  // Samples in profil's own code, left out of its profile
  // (format::set_apart_own_samples).
  uint64_t own_samples = 0;
  format::profraw::EndReason end_reason = format::profraw::EndReason::exit;
  uint32_t signal = 0;
  std::vector<std::string> files;  // the files holding its samples
  // CPU time no sample caught (threads with the signal blocked, a closed
  // perf descriptor), and the counts its [unsampled: ...] rows carry.
  std::vector<format::profraw::Unsampled> unsampled;
  uint64_t unsampled_counts = 0;
  std::string start_clock;  // differs from clock when sampling switched clocks
  bool interpreter_frames = false;  // read inside at each sample: perf-signal by choice (profraw.h)
  // Its wait status, when profil run waited for it itself (the program, an
  // orphan); -1 when its parent did.
  int reaped_status = -1;
  // The errno its final dump was refused with (the ledger's record), 0
  // when none was.
  int write_error = 0;
  // Samples whose stack the unwinder could not follow to the outermost
  // frame (shown under [truncated]), of those with a stack.
  uint64_t cut_stacks = 0, with_stacks = 0;

  // Sampled from outside (outside_run.h), not by the preload.
  bool outside = false;
  // A snapshot cut from a running process's dump (inside_snapshots.h).
  bool snapshot = false;

  bool empty() const { return samples == 0 && unsampled.empty(); }
  // What its profile stands for, unsampled rows included.
  uint64_t cpu_ns() const { return (samples + unsampled_counts) * period_ns; }
  double cpu_seconds() const { return static_cast<double>(samples) * static_cast<double>(period_ns) * 1e-9; }
};

// One problem with a profile that should exist and does not: "profil:
// <what>: <why>"; the run then exits 1 if the program exited 0 (docs/run.md,
// "Errors").
struct Loss {
  std::string what, why;
  int error = 0;  // the errno of a file that could not be written, else 0
};

// Hours attached with --every (issue 32): the processes that ended in an
// earlier snapshot, folded into one account (fold_ended) so that profil's
// memory stays flat however many come and go: a server's recycled workers
// kept a summary per process and snapshot, and every file's name, for the
// whole attach.
struct FoldedProcesses {
  size_t pids = 0, sampled_pids = 0;  // images folded (one pid each), those with samples
  size_t files = 0;                    // their files, in Conversion::files no more
  size_t snapshots = 0;                // the most snapshots one of them had
  // Their samples, own samples, dropped ones, stack counts and unsampled
  // records (one per cause) summed; label "N processes that ended".
  ProcessSummary sum;
};

// What the conversion of a run found and wrote.
struct Conversion {
  std::vector<ProcessSummary> processes;  // one per profile, in the order they came
  std::vector<std::string> files;         // every file written
  std::string shared_file;                // the file the small processes share, when written
  size_t shared_processes = 0;
  std::map<int64_t, bool> dumped;         // pid -> wrote a dump at its end (not only before an exec)
  std::set<std::pair<int64_t, int64_t>> images;  // (pid, start_ns) of every image accounted for
  std::vector<Loss> losses;               // in the order they happened
  std::vector<std::string> warnings;      // the symbolizer's (missing objects, build ids that differ)
  FoldedProcesses folded;                 // processes folded by fold_ended (none without)
};

// One process's profile on its way to the files: from a dump of the run
// directory (run_dumps.h), or made in memory by a source outside the
// process.
struct ProcessProfile {
  // As format::read_profraw returns it (profile, pid, ppid, hz, clock, end
  // reason, cpu_ns, unsampled, ...).
  format::ProfrawData data;
  // The output file stem, "<prog>.<pid>[.<n>]"; <prog> names the process
  // in every line about it.
  std::string stem;
  // The dump it was read from, removed once converted; empty for a profile
  // made in memory.
  std::string raw_path;
  // A --every window in which nothing was sampled: its file is written all
  // the same, empty (issue 32: a window is a file, however quiet).
  bool empty_window = false;
};

struct ConvertOptions {
  bool symbolize = true;  // function names and lines in the pprof files
  bool gmon = false;      // gmon.<stem>.out beside each file of its own
  // A process whose samples stand for less than kOwnFileCpuNs has them put
  // in one file with the other such processes (two or more), each sample
  // labelled with its pid; without, every process gets <stem>.pb.gz.
  bool share = true;
  // Where the shared file goes, and the files of a profile made in memory
  // (a dump's go beside it: --convert writes next to the files it is given).
  std::filesystem::path dir = ".";
  // Applied to each dump's profile before the sinks take it: profil run
  // --inside --every makes a process's final dump the snapshot of what came
  // after its last one (inside_snapshots.h).
  std::function<void(ProcessProfile&)> reshape = nullptr;
};

// The sinks every profile goes through, one profile at a time (a large one
// is written and dropped before the next is read): <stem>.pb.gz (and
// gmon.<stem>.out on request) for each process of real CPU, and, at the
// end, small.<pid>.pb.gz for the others (<pid> profil's own).
class ProfileSinks {
 public:
  explicit ProfileSinks(ConvertOptions options);
  ~ProfileSinks();
  ProfileSinks(const ProfileSinks&) = delete;
  ProfileSinks& operator=(const ProfileSinks&) = delete;

  void add(ProcessProfile profile);
  // A profile a source could not make (a dump it cannot read), in the order
  // of the others' losses.
  void lose(const std::string& what, const std::string& why);
  // Writes the shared file; what was written and lost since the last
  // finish(). The sinks may take more profiles after it: snapshots keep
  // one converter, and its symbolizer's cache of every object's symbols
  // and lines, for the whole run (a new one for each cost 62 ms of profil's
  // CPU a snapshot, bench/every.sh).
  Conversion finish();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The profiles, through the sinks.
Conversion convert_profiles(std::vector<ProcessProfile> profiles, const ConvertOptions& options);

}  // namespace profiling::cli

#endif  // PROFIL_TOOLS_RUN_CONVERT_H
