// Summing profiles one at a time (issue 23). `profil merge` and `profil
// report` read an input, fold it into the sum and drop it, so that memory
// follows the sum (its distinct samples, stacks, mappings and named
// addresses) and not the number of inputs, and an input costs time in its
// own size, not in the size of the sum so far. What is summed, and how, is
// input.h's merge_profiles (gprof -s: objects matched by build id, else
// path, one sampling period); ProfileMerger is its engine.
#ifndef PROFIL_REPORT_MERGE_H
#define PROFIL_REPORT_MERGE_H

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "format/profile.h"
#include "report/input.h"

namespace profiling::report {

// How a sum of several processes holds their samples.
enum class Processes {
  // Apart: each sample keeps its process's pid (pprof label "pid"; its
  // own, else its profile's), as `profil run`'s file of small processes
  // and `profil merge --by-process` want. The sum grows with each process.
  apart,
  // Summed over the processes, pids dropped (as gprof -s and go tool pprof
  // -proto sum): the sum is bounded by the distinct stacks, however many
  // processes ran them. `programs` still counts the processes.
  summed,
};

class ProfileMerger {
 public:
  explicit ProfileMerger(Processes processes = Processes::apart) : processes_(processes) {}

  // Folds one input into the sum; its samples, stacks and names are moved
  // from it. Throws InputError naming the input when its sampling period
  // differs from the first input's that had one; the sum is then as it was.
  void add(LoadedProfile&& input);

  size_t inputs() const { return inputs_; }

  // What the sum holds so far. Folding again an input the sum already holds
  // (same objects, stacks, pids) leaves every size as it was.
  struct Sizes {
    size_t samples = 0;          // distinct (leaf, pid, stack)
    size_t stacks = 0;           // distinct caller chains
    size_t stack_frames = 0;     // frames of those chains
    size_t mappings = 0;
    size_t named_addresses = 0;  // addresses with names from the files
    size_t programs = 0;         // distinct programs
    friend bool operator==(const Sizes&, const Sizes&) = default;
  };
  Sizes sizes() const;

  // The sum, as merge_profiles documents it; the merger is left empty.
  // Counts that would pass 2^64-1 stay there and set *saturated.
  format::Profile finish(bool* saturated = nullptr);

 private:
  // One (leaf, pid, stack) of the sum; its count is summed in place.
  uint32_t find_or_add(const format::Sample& sample);
  void grow_sample_index();
  void relabel_first_input();
  bool overlaps(uint64_t start, uint64_t limit) const;
  void occupy(const format::Mapping& mapping);
  void add_program(const format::ProgramProcesses& program);

  Processes processes_;
  size_t inputs_ = 0;
  format::Profile sum_;  // everything but the samples while inputs arrive
  bool overflow_ = false;
  bool observations_ = true;  // every input so far has observations
  std::string period_source_;  // the first input with a period: named when another differs
  std::string event_source_;   // the first input: named when another counts another event

  // The samples, each (address, pid, stack) once, with an open-addressing
  // index of positions + 1 (0 empty), at most half full.
  std::vector<format::Sample> samples_;
  std::vector<uint32_t> sample_index_;

  // Objects: "id:<build id>@<offset>" or "path:<path>@<offset>" -> the
  // mapping of the sum; the address ranges the sum's mappings occupy
  // (start -> limit, disjoint), and the highest limit.
  std::unordered_map<std::string, size_t> mapping_of_;
  std::map<uint64_t, uint64_t> occupied_;
  uint64_t top_ = 0;

  // The first input is summed before it is known whether others follow:
  // its samples take its pid (apart) or lose theirs (summed), and it counts
  // as processes, only when one does (one profile stays as it was).
  int64_t first_pid_ = 0;
  std::vector<format::ProgramProcesses> first_programs_;
  std::unordered_map<std::string, size_t> program_of_;
  // The time windows (start, end; Unix ns) of the inputs of one known
  // process, by (program, pid): inputs whose windows join end to start
  // are the snapshots of one process (--every cuts them so), counted as
  // one at finish() (issue 35); a pid met again after a gap is another
  // process (pids are reused, and every container has a pid 1).
  std::map<std::pair<std::string, int32_t>, std::vector<std::pair<int64_t, int64_t>>> windows_;
};

}  // namespace profiling::report

#endif  // PROFIL_REPORT_MERGE_H
