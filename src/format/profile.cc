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
    return a.tid != b.tid ? a.tid < b.tid : a.stack < b.stack;
  };
  if (!std::is_sorted(samples->begin(), samples->end(), by_address))
    std::sort(samples->begin(), samples->end(), by_address);
  bool saturated = false;
  size_t kept = 0;
  for (size_t i = 0; i < samples->size(); ++i) {
    Sample& s = (*samples)[i];
    const Sample* last = kept > 0 ? &(*samples)[kept - 1] : nullptr;
    if (last && last->address == s.address && last->pid == s.pid && last->tid == s.tid && last->stack == s.stack) {
      saturated |= saturating_add((*samples)[kept - 1].count, s.count);
      saturating_add((*samples)[kept - 1].observations, s.observations);
    } else {
      (*samples)[kept++] = s;
    }
  }
  samples->resize(kept);
  return saturated;
}

namespace {

// A 64-bit mix of a chain (murmur3's finalizer over a running sum): the
// table's keys are the frames themselves, never stored twice.
uint64_t hash_chain(std::span<const uint64_t> callers, bool truncated) {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ (truncated ? 0xff51afd7ed558ccdull : 0) ^ callers.size();
  for (uint64_t frame : callers) {
    h ^= frame + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
  }
  h ^= h >> 29;
  return h;
}

}  // namespace

std::span<const uint64_t> StackTable::callers(uint32_t id) const {
  if (id == kNoCallers || id > ends_.size()) return {};
  const uint64_t begin = id == 1 ? 0 : ends_[id - 2] >> 1, end = ends_[id - 1] >> 1;
  return std::span<const uint64_t>(frames_.data() + begin, end - begin);
}

void StackTable::grow_index() {
  std::vector<uint32_t> bigger(index_.empty() ? 64 : index_.size() * 2, 0);
  const size_t mask = bigger.size() - 1;
  for (uint32_t id = 1; id <= ends_.size(); ++id) {
    size_t slot = hash_chain(callers(id), truncated(id)) & mask;
    while (bigger[slot] != 0) slot = (slot + 1) & mask;
    bigger[slot] = id;
  }
  index_.swap(bigger);
}

uint32_t StackTable::find(std::span<const uint64_t> chain, bool is_truncated) const {
  if (chain.empty() && !is_truncated) return kNoCallers;
  if (index_.empty()) return UINT32_MAX;
  const size_t mask = index_.size() - 1;
  for (size_t slot = hash_chain(chain, is_truncated) & mask; index_[slot] != 0; slot = (slot + 1) & mask) {
    const uint32_t id = index_[slot];
    const std::span<const uint64_t> known = callers(id);
    if (truncated(id) == is_truncated && std::equal(known.begin(), known.end(), chain.begin(), chain.end()))
      return id;
  }
  return UINT32_MAX;
}

uint32_t StackTable::intern(std::span<const uint64_t> chain, bool is_truncated) {
  if (chain.empty() && !is_truncated) return kNoCallers;
  // At most half full: probes stay short.
  if ((ends_.size() + 1) * 2 > index_.size()) grow_index();
  const size_t mask = index_.size() - 1;
  size_t slot = hash_chain(chain, is_truncated) & mask;
  for (; index_[slot] != 0; slot = (slot + 1) & mask) {
    const uint32_t id = index_[slot];
    const std::span<const uint64_t> known = callers(id);
    if (truncated(id) == is_truncated && std::equal(known.begin(), known.end(), chain.begin(), chain.end()))
      return id;
  }
  if (ends_.size() >= std::numeric_limits<uint32_t>::max() - 1) throw FormatError("more than 2^32 distinct stacks");
  frames_.insert(frames_.end(), chain.begin(), chain.end());
  ends_.push_back(static_cast<uint64_t>(frames_.size()) << 1 | (is_truncated ? 1 : 0));
  const uint32_t id = static_cast<uint32_t>(ends_.size());
  index_[slot] = id;
  return id;
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
