#include "format/profile.h"

#include <algorithm>
#include <limits>
#include <map>

#include "format/format_error.h"

namespace profiling::format {

uint64_t Profile::total_count() const {
  uint64_t total = 0;
  for (const Sample& s : samples) saturating_add(total, s.count);
  return total;
}

uint64_t Profile::total_observations() const {
  uint64_t total = 0;
  if (has_observations)
    for (const Sample& s : samples) saturating_add(total, s.observations);
  return total;
}

bool coalesce_samples(std::vector<Sample>* samples) {
  auto by_address = [](const Sample& a, const Sample& b) {
    if (a.address != b.address) return a.address < b.address;
    if (a.pid != b.pid) return a.pid < b.pid;
    if (a.tid != b.tid) return a.tid < b.tid;
    return a.stack != b.stack ? a.stack < b.stack : a.gil < b.gil;
  };
  if (!std::is_sorted(samples->begin(), samples->end(), by_address))
    std::sort(samples->begin(), samples->end(), by_address);
  bool saturated = false;
  size_t kept = 0;
  for (size_t i = 0; i < samples->size(); ++i) {
    Sample& s = (*samples)[i];
    const Sample* last = kept > 0 ? &(*samples)[kept - 1] : nullptr;
    if (last && last->address == s.address && last->pid == s.pid && last->tid == s.tid && last->stack == s.stack &&
        last->gil == s.gil) {
      saturated |= saturating_add((*samples)[kept - 1].count, s.count);
      saturating_add((*samples)[kept - 1].observations, s.observations);
    } else {
      (*samples)[kept++] = s;
    }
  }
  samples->resize(kept);
  return saturated;
}

void canonicalize_stacks(Profile* profile) {
  if (profile->stacks.empty()) return;
  coalesce_samples(&profile->samples);
  // Already canonical (every chain used, first named in id order: what a
  // file written by encode_pprof mostly reads back as): renumbering would
  // build the same table again, a fifth of the cost of reading a profile
  // with stacks (issue 23: merging thousands of them).
  uint32_t next = 1;
  bool in_order = true;
  for (const Sample& sample : profile->samples) {
    if (sample.stack == next) ++next;
    else if (sample.stack > next) in_order = false;
    if (!in_order) break;
  }
  if (in_order && next - 1 == profile->stacks.size()) return;
  StackTable canonical;
  std::vector<uint32_t> renumbered(profile->stacks.size() + 1, UINT32_MAX);
  renumbered[StackTable::kNoCallers] = StackTable::kNoCallers;
  for (Sample& sample : profile->samples) {
    uint32_t& id = renumbered[sample.stack < renumbered.size() ? sample.stack : 0];
    if (id == UINT32_MAX) id = canonical.intern(profile->stacks.callers(sample.stack), profile->stacks.truncated(sample.stack));
    sample.stack = id;
  }
  profile->stacks = std::move(canonical);
  coalesce_samples(&profile->samples);
}

void Timeline::sort_by_time() {
  auto by_time = [](const TimedSample& a, const TimedSample& b) { return a.time_ns < b.time_ns; };
  if (!std::is_sorted(samples.begin(), samples.end(), by_time)) std::stable_sort(samples.begin(), samples.end(), by_time);
}

std::string describe_programs(const std::vector<ProgramProcesses>& programs) {
  // Most processes first; of equal counts, the one met first.
  std::vector<const ProgramProcesses*> order;
  for (const ProgramProcesses& p : programs) order.push_back(&p);
  std::stable_sort(order.begin(), order.end(),
                   [](const ProgramProcesses* a, const ProgramProcesses* b) { return a->processes > b->processes; });
  auto base_name = [](const std::string& path) {
    size_t slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
  };
  // A file name two programs share would read as one program twice.
  std::map<std::string, size_t> named;
  for (const ProgramProcesses& p : programs) ++named[base_name(p.program)];
  constexpr size_t kListed = 10;
  std::string text;
  uint64_t rest = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    const ProgramProcesses& p = *order[i];
    if (i >= kListed) {
      saturating_add(rest, p.processes);
      continue;
    }
    std::string name = named[base_name(p.program)] > 1 ? p.program : base_name(p.program);
    if (name.empty()) name = "[unknown program]";
    if (!text.empty()) text += ", ";
    text += name + " (" + (p.snapshots > p.processes ? std::to_string(p.snapshots) + " snapshots of " : "") +
            std::to_string(p.processes);
    if (i == 0) text += p.processes == 1 ? " process" : " processes";
    text += ")";
  }
  if (order.size() > kListed)
    text += " and " + std::to_string(order.size() - kListed) + " more programs (" + std::to_string(rest) + ")";
  return text;
}

const Mapping* Profile::mapping_for(uint64_t address) const {
  for (const Mapping& m : mappings)
    if (m.contains(address)) return &m;
  return nullptr;
}

const std::vector<Frame>* Profile::frames_for(uint64_t address) const {
  auto it = frames.find(address);
  return it == frames.end() ? nullptr : &it->second;
}

}  // namespace profiling::format
