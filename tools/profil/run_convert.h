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
#include <memory>
#include <string>
#include <vector>

#include "conversion.h"
#include "format/profraw.h"

namespace profiling::cli {

// A process whose samples stand for at least this much CPU keeps a file of
// its own; the others of the run share one (docs/run.md, "Output").
inline constexpr uint64_t kOwnFileCpuNs = 10'000'000;

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
  // After a finish(): a new symbolizer, the old one's objects, mapped
  // debug files and named addresses freed; the rest (the run's unsampled
  // carry) kept. Hours of snapshots renew it (outside_run_write.cc).
  void renew_symbolizer();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The profiles, through the sinks.
Conversion convert_profiles(std::vector<ProcessProfile> profiles, const ConvertOptions& options);

}  // namespace profiling::cli

#endif  // PROFIL_TOOLS_RUN_CONVERT_H
