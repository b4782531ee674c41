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
#include <map>
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
  int64_t pid = 0;
  uint64_t samples = 0;
  uint64_t period_ns = 0;
  std::string clock;
  uint32_t hz = 0;
  uint64_t dropped = 0;
  format::profraw::EndReason end_reason = format::profraw::EndReason::exit;
  uint32_t signal = 0;
  std::vector<std::string> files;  // the files holding its samples
  // CPU time no sample caught (threads with the signal blocked, a closed
  // perf descriptor), and the counts its [unsampled: ...] rows carry.
  std::vector<format::profraw::Unsampled> unsampled;
  uint64_t unsampled_counts = 0;
  std::string start_clock;  // differs from clock when sampling switched clocks
  // Its wait status, when profil run waited for it itself (the program, an
  // orphan); -1 when its parent did.
  int reaped_status = -1;
  // Samples whose stack the unwinder could not follow to the outermost
  // frame (shown under [truncated]), of those with a stack.
  uint64_t cut_stacks = 0, with_stacks = 0;

  bool empty() const { return samples == 0 && unsampled.empty(); }
  // What its profile stands for, unsampled rows included.
  uint64_t cpu_ns() const { return (samples + unsampled_counts) * period_ns; }
  double cpu_seconds() const { return static_cast<double>(samples) * static_cast<double>(period_ns) * 1e-9; }
};

// What the conversion of a run found and wrote.
struct Conversion {
  std::vector<ProcessSummary> processes;  // one per dump read, in file name order
  std::vector<std::string> files;         // every file written
  std::string shared_file;                // the file the small processes share, when written
  size_t shared_processes = 0;
  std::map<int64_t, bool> dumped;         // pid -> wrote a dump at its end (not only before an exec)
  std::set<std::pair<int64_t, int64_t>> images;  // (pid, start_ns) of every image accounted for
  std::vector<std::string> losses;        // one line each; already printed
};

// One line for a profile that should exist and does not; the run then
// exits 1 if the program exited 0 (docs/run.md, "Errors").
void lose(Conversion* c, const std::string& what, const std::string& why);

struct ConvertOptions {
  bool symbolize = true;  // function names and lines in the pprof files
  bool gmon = false;      // gmon.<stem>.out beside each file of its own
};

// Converts the dumps. With `share`, a process whose samples stand for less
// than kOwnFileCpuNs has its samples put in one file with the other such
// processes of the run, each sample labelled with its pid; otherwise (and
// for the only such process) each process gets <stem>.pb.gz.
//
// The ledger's end records (format/profraw.h, LedgerRecord) stand for the
// processes that ended without a sample and so wrote no dump.
Conversion convert_dumps(const std::vector<std::filesystem::path>& dumps, const std::string& run_id,
                         const ConvertOptions& options, const std::filesystem::path& dir, bool share,
                         const std::vector<format::profraw::LedgerRecord>& records = {});

}  // namespace profiling::cli

#endif  // PROFIL_TOOLS_RUN_CONVERT_H
