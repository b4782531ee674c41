#include "report/merge.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "format/format_error.h"

namespace profiling::report {
namespace {

// A 64-bit mix of a sample's key (address, pid, thread, stack):
// splitmix64's finalizer over the words.
uint64_t hash_key(const format::Sample& s) {
  uint64_t h = s.address * 0x9e3779b97f4a7c15ull;
  h ^= (static_cast<uint64_t>(static_cast<uint32_t>(s.pid)) << 32 | s.stack) + 0x632be59bd9b4e019ull + (h << 6) +
       (h >> 2);
  h ^= static_cast<uint32_t>(s.tid) * 0xc2b2ae3d27d4eb4full;
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

bool same_key(const format::Sample& a, const format::Sample& b) {
  return a.address == b.address && a.pid == b.pid && a.tid == b.tid && a.stack == b.stack;
}

}  // namespace

void ProfileMerger::grow_sample_index() {
  std::vector<uint32_t> bigger(sample_index_.empty() ? 1024 : sample_index_.size() * 2, 0);
  const size_t mask = bigger.size() - 1;
  for (size_t i = 0; i < samples_.size(); ++i) {
    size_t slot = hash_key(samples_[i]) & mask;
    while (bigger[slot] != 0) slot = (slot + 1) & mask;
    bigger[slot] = static_cast<uint32_t>(i + 1);
  }
  sample_index_.swap(bigger);
}

uint32_t ProfileMerger::find_or_add(const format::Sample& sample) {
  // At most half full: probes stay short.
  if ((samples_.size() + 1) * 2 > sample_index_.size()) grow_sample_index();
  const size_t mask = sample_index_.size() - 1;
  size_t slot = hash_key(sample) & mask;
  for (; sample_index_[slot] != 0; slot = (slot + 1) & mask) {
    format::Sample& known = samples_[sample_index_[slot] - 1];
    if (same_key(known, sample)) {
      overflow_ |= format::saturating_add(known.count, sample.count);
      format::saturating_add(known.observations, sample.observations);
      return sample_index_[slot] - 1;
    }
  }
  if (samples_.size() >= std::numeric_limits<uint32_t>::max() - 1)
    throw format::FormatError("more than 2^32 distinct samples in the sum");
  samples_.push_back(sample);
  sample_index_[slot] = static_cast<uint32_t>(samples_.size());
  return static_cast<uint32_t>(samples_.size() - 1);
}

bool ProfileMerger::overlaps(uint64_t start, uint64_t limit) const {
  // The sum's ranges are disjoint: of those that start below `limit`, the
  // last reaches furthest, so it alone can reach past `start`.
  auto it = occupied_.lower_bound(limit);
  if (it == occupied_.begin()) return false;
  return std::prev(it)->second > start;
}

void ProfileMerger::occupy(const format::Mapping& mapping) {
  // An empty range holds no address: nothing can overlap it.
  if (mapping.start < mapping.limit) occupied_[mapping.start] = mapping.limit;
  top_ = std::max(top_, mapping.limit);
}

void ProfileMerger::add_program(const format::ProgramProcesses& program) {
  auto [it, inserted] = program_of_.try_emplace(program.program, sum_.programs.size());
  if (inserted) sum_.programs.push_back({program.program, 0});
  format::ProgramProcesses& sum = sum_.programs[it->second];
  overflow_ |= format::saturating_add(sum.processes, program.processes);
  // Profiles, one per process where the input did not count snapshots.
  overflow_ |= format::saturating_add(sum.snapshots, program.snapshots ? program.snapshots : program.processes);
}

void ProfileMerger::relabel_first_input() {
  // A second input: the first one's samples take its pid (apart: those
  // that carried none) or lose theirs (summed), and it counts as its
  // processes. Relabelled samples may meet one of the same key (apart: one
  // the file labelled with that pid itself): re-added, they sum.
  sum_.pid = 0;
  sum_.programs.clear();
  program_of_.clear();
  for (const format::ProgramProcesses& p : first_programs_) add_program(p);
  std::vector<format::ProgramProcesses>().swap(first_programs_);
  const auto pid = static_cast<int32_t>(first_pid_);  // Linux pids fit 32 bits (format::Sample::pid)
  auto relabelled = [&](int32_t own) { return processes_ == Processes::summed ? 0 : own ? own : pid; };
  // The first input's samples were taken as they were, without an index.
  std::vector<format::Sample> first = std::move(samples_);
  samples_.clear();
  std::fill(sample_index_.begin(), sample_index_.end(), 0);
  if (processes_ == Processes::summed) sum_.thread_names.clear();
  for (format::Sample& s : first) {
    s.pid = relabelled(s.pid);
    if (processes_ == Processes::summed) s.tid = 0;
    find_or_add(s);
  }
  for (format::TimedSample& t : sum_.timeline.samples) {
    t.pid = relabelled(t.pid);
    if (processes_ == Processes::summed) t.tid = 0;
  }
}

void ProfileMerger::add(LoadedProfile&& input) {
  format::Profile& p = input.profile;
  // Refused before anything of it is summed.
  if (p.period_ns != 0) {
    if (period_source_.empty()) {
      period_source_ = input.path;
      sum_.period_ns = p.period_ns;
    } else if (p.period_ns != sum_.period_ns) {
      throw InputError(input.path, "sampling period " + std::to_string(p.period_ns) + " ns differs from " +
                                       period_source_ + "'s " + std::to_string(sum_.period_ns) +
                                       " ns; profiles taken at different rates cannot be summed");
    }
  }
  // Counts of two events (or time and an event), or of one event taken
  // at two periods, are no sum (issue 33).
  const auto what = [](const format::Profile& q) {
    return q.event.empty() ? std::string("time") : q.event + " every " + std::to_string(q.event_period);
  };
  if (inputs_ == 0) {
    event_source_ = input.path;
    sum_.event = p.event;
    sum_.event_period = p.event_period;
  } else if (p.event != sum_.event || p.event_period != sum_.event_period) {
    throw InputError(input.path, "sampled " + what(p) + ", " + event_source_ + " " + what(sum_) +
                                     ": profiles of different events cannot be summed");
  }
  ++inputs_;
  if (inputs_ == 1) {
    sum_.clock = p.clock;
    sum_.pid = p.pid;
    sum_.program = p.program;
    sum_.programs = p.programs;
    first_pid_ = p.pid;
  } else {
    if (inputs_ == 2) relabel_first_input();
    if (p.clock != sum_.clock) sum_.clock.clear();
  }
  overflow_ |= format::saturating_add(sum_.duration_ns, p.duration_ns);
  overflow_ |= format::saturating_add(sum_.dropped, p.dropped);
  overflow_ |= format::saturating_add(sum_.own_samples, p.own_samples);
  overflow_ |= format::saturating_add(sum_.stacks_dropped, p.stacks_dropped);
  if (p.time_nanos != 0 && (sum_.time_nanos == 0 || p.time_nanos < sum_.time_nanos)) sum_.time_nanos = p.time_nanos;

  // Objects are matched by build id (the same file loaded anywhere), else by
  // path; each (object, file offset) keeps the address range it had in the
  // first profile that mapped it, or moves above everything when another
  // object already occupies that range (ASLR puts objects anywhere).
  std::vector<size_t> target(p.mappings.size());
  bool moved = false;  // some mapping of p lands at another address
  for (size_t i = 0; i < p.mappings.size(); ++i) {
    const format::Mapping& m = p.mappings[i];
    std::string key = (m.build_id.empty() ? "path:" + m.path : "id:" + m.build_id) + "@" + std::to_string(m.file_offset);
    auto [it, inserted] = mapping_of_.try_emplace(std::move(key), sum_.mappings.size());
    if (inserted) {
      format::Mapping placed = m;
      if (overlaps(m.start, m.limit)) {
        placed.start = (top_ + 0xfffff) & ~uint64_t{0xfffff};
        placed.limit = placed.start + (m.limit - m.start);
      }
      occupy(placed);
      sum_.mappings.push_back(std::move(placed));
    } else {
      format::Mapping& placed = sum_.mappings[it->second];
      const uint64_t needed = placed.start + (m.limit - m.start);
      if (needed > placed.limit && !overlaps(placed.limit, needed)) {
        placed.limit = needed;
        occupy(placed);
      }
      if (placed.build_id.empty()) placed.build_id = m.build_id;
    }
    target[i] = it->second;
    moved |= sum_.mappings[it->second].start != m.start;
  }
  auto relocated = [&](uint64_t address) {
    if (!moved) return address;
    for (size_t i = 0; i < p.mappings.size(); ++i)
      if (p.mappings[i].contains(address)) return address - p.mappings[i].start + sum_.mappings[target[i]].start;
    return address;
  };

  // Of several inputs, each sample keeps its process's pid (its own, else
  // its profile's), so a sum of several processes keeps each findable;
  // or, summed, none.
  const bool summed = processes_ == Processes::summed && inputs_ > 1;
  const int32_t default_pid = inputs_ > 1 ? static_cast<int32_t>(p.pid) : 0;
  // An input that sums several processes without saying which programs
  // (a shared file of an older profil run) counts the pids it labels, and
  // its own process where samples carry none.
  std::vector<int32_t> pids;
  bool unlabelled = p.samples.empty();
  // A sum has observations when every input has them (issue 22); with one
  // input that has none, its counts would count as draws and the others'
  // not: the sum then has none, and intervals are as they were.
  observations_ = observations_ && p.has_observations;
  // The first input's stacks are the sum's as they are (same ids);
  // another's are added to the sum's table once each, relocated, so that
  // identical stacks of several inputs are one.
  const bool adopt = !moved && samples_.empty() && sum_.stacks.empty();
  if (adopt) sum_.stacks = std::move(p.stacks);
  std::vector<uint32_t> stack_ids;
  if (!adopt) {
    stack_ids.assign(p.stacks.size() + 1, UINT32_MAX);
    stack_ids[format::StackTable::kNoCallers] = format::StackTable::kNoCallers;
  }
  std::vector<uint64_t> callers;
  if (adopt && inputs_ == 1) {
    // The first input's samples are taken whole, as the readers left them
    // (summed per key): a large profile alone is never copied. They are
    // indexed when a second input comes (relabel_first_input).
    if (p.programs.empty())
      for (const format::Sample& sample : p.samples) {
        if (sample.pid != 0) pids.push_back(sample.pid);
        else unlabelled = true;
      }
    samples_ = std::move(p.samples);
    p.samples.clear();
  }
  for (const format::Sample& sample : p.samples) {
    if (p.programs.empty()) {
      if (sample.pid != 0) pids.push_back(sample.pid);
      else unlabelled = true;
    }
    uint32_t stack = sample.stack;
    if (!adopt) {
      uint32_t& id = stack_ids[sample.stack < stack_ids.size() ? sample.stack : 0];
      if (id == UINT32_MAX) {
        callers.clear();
        for (uint64_t caller : p.stacks.callers(sample.stack)) callers.push_back(relocated(caller));
        id = sum_.stacks.intern(callers, p.stacks.truncated(sample.stack));
      }
      stack = id;
    }
    const int32_t pid = summed ? 0 : sample.pid ? sample.pid : default_pid;
    format::Sample added{relocated(sample.address), sample.count, pid, stack, summed ? 0 : sample.tid};
    added.observations = sample.observations;
    find_or_add(added);
  }
  // The timeline (issue 33) as the samples: relocated, relabelled, its
  // chains interned in the sum's own timeline table.
  if (!moved && sum_.timeline.empty()) {
    sum_.timeline = std::move(p.timeline);
    if (inputs_ > 1)
      for (format::TimedSample& t : sum_.timeline.samples) {
        t.pid = summed ? 0 : t.pid ? t.pid : default_pid;
        if (summed) t.tid = 0;
      }
  } else {
    std::vector<uint32_t> timeline_ids(p.timeline.stacks.size() + 1, UINT32_MAX);
    for (format::TimedSample t : p.timeline.samples) {
      uint32_t& id = timeline_ids[t.stack < timeline_ids.size() ? t.stack : 0];
      if (id == UINT32_MAX) {
        callers.clear();
        for (uint64_t caller : p.timeline.stacks.callers(t.stack)) callers.push_back(relocated(caller));
        id = sum_.timeline.stacks.intern(callers, p.timeline.stacks.truncated(t.stack));
      }
      t.stack = id;
      t.address = relocated(t.address);
      t.pid = summed ? 0 : t.pid ? t.pid : default_pid;
      if (summed) t.tid = 0;
      sum_.timeline.samples.push_back(t);
    }
  }
  p.timeline = format::Timeline();
  // Threads as processes: apart, each keeps its name (the first input's
  // where two name one tid); summed, none.
  if (!summed) {
    if (sum_.thread_names.empty()) sum_.thread_names = std::move(p.thread_names);
    else sum_.thread_names.merge(p.thread_names);
  }
  p.thread_names.clear();
  std::vector<format::Sample>().swap(p.samples);
  p.stacks = format::StackTable();

  // One object's names at one address are the same in every profile that
  // names them; the first profile's are kept.
  if (!moved && sum_.frames.empty()) {
    sum_.frames = std::move(p.frames);
  } else {
    for (auto& [address, frames] : p.frames) sum_.frames.try_emplace(relocated(address), std::move(frames));
  }
  p.frames.clear();

  // The programs: those the input names, else its own, as many processes
  // as its samples name.
  std::vector<format::ProgramProcesses> own = p.programs;
  if (own.empty()) {
    if (unlabelled) pids.push_back(static_cast<int32_t>(p.pid));
    std::sort(pids.begin(), pids.end());
    pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
    const uint64_t processes = std::max<size_t>(1, pids.size());
    // A profile of one known process: its window, to tell its snapshots
    // from other processes at finish().
    if (pids.size() == 1 && pids[0] != 0 && p.time_nanos > 0)
      windows_[{p.program, pids[0]}].emplace_back(p.time_nanos,
                                                  p.time_nanos + static_cast<int64_t>(p.duration_ns));
    own.push_back({p.program, processes});
  }
  if (inputs_ == 1) {
    first_programs_ = std::move(own);
  } else {
    for (const format::ProgramProcesses& program : own) add_program(program);
  }
}

ProfileMerger::Sizes ProfileMerger::sizes() const {
  return {samples_.size(),      sum_.stacks.size(), sum_.stacks.frame_count(), sum_.mappings.size(),
          sum_.frames.size(),   inputs_ > 1 ? sum_.programs.size() : first_programs_.size()};
}

format::Profile ProfileMerger::finish(bool* saturated) {
  if (saturated) *saturated = overflow_;
  format::Profile sum = std::move(sum_);
  std::vector<uint32_t>().swap(sample_index_);  // freed before the samples are sorted
  sum.samples = std::move(samples_);
  // Sorted by address, pid and stack, as every reader leaves them; each is
  // there once already, so nothing more is summed.
  format::coalesce_samples(&sum.samples);
  sum.timeline.sort_by_time();  // Unix epoch times: several files of one run fall in order
  sum.has_observations = observations_ && inputs_ > 0;
  if (!sum.has_observations)
    for (format::Sample& s : sum.samples) s.observations = 0;
  // The snapshots of one process (windows joined end to start, in any
  // order of the inputs) are one process of several profiles.
  for (auto& [key, windows] : windows_) {
    std::sort(windows.begin(), windows.end());
    uint64_t joined = 0;
    for (size_t i = 1; i < windows.size(); ++i) joined += windows[i].first == windows[i - 1].second;
    auto it = program_of_.find(key.first);
    if (joined == 0 || it == program_of_.end()) continue;
    format::ProgramProcesses& program = sum.programs[it->second];
    program.processes = program.processes > joined ? program.processes - joined : 1;
  }
  // Of several processes the program is what they ran, not the first's;
  // snapshots are counted where some process came in several.
  for (format::ProgramProcesses& program : sum.programs)
    if (program.snapshots <= program.processes) program.snapshots = 0;
  if (inputs_ > 1) sum.program = format::describe_programs(sum.programs);
  *this = ProfileMerger(processes_);
  return sum;
}

}  // namespace profiling::report
