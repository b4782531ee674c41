// What the conversion of a run's profiles found and wrote: a summary per
// process, the files, the losses and warnings (run_convert.h makes it,
// run_print.h says it, conversion_snapshots.h appends and folds a
// snapshot's). Split from run_convert.h to keep that room under 500 lines.
#ifndef PROFIL_TOOLS_CONVERSION_H
#define PROFIL_TOOLS_CONVERSION_H

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "format/profraw.h"

namespace profiling::cli {

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

}  // namespace profiling::cli

#endif  // PROFIL_TOOLS_CONVERSION_H
