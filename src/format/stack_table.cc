#include "format/stack_table.h"

#include <algorithm>
#include <limits>

#include "format/format_error.h"

namespace profiling::format {

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

}  // namespace profiling::format
