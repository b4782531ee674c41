#include "outside/sample_counts.h"

namespace profiling::outside {
namespace {

// The slot's bits come from the top of the product: a power-of-two index
// masks the low bits of a plain hash, where leaves that differ by a few
// bytes (one loop's PCs) differ only in those.
size_t slot_of(const SampleKey& k, size_t mask) {
  const uint64_t h = SampleKey::Hash{}(k) * 0x9E3779B97F4A7C15ull;
  return static_cast<size_t>(h >> 32) & mask;
}

}  // namespace

SampleCounts::Tally& SampleCounts::operator[](const SampleKey& key) {
  if ((entries_.size() + 1) * 2 > index_.size()) grow();
  const size_t mask = index_.size() - 1;
  size_t slot = slot_of(key, mask);
  for (; index_[slot] != 0; slot = (slot + 1) & mask) {
    Entry& e = entries_[index_[slot] - 1];
    if (e.key == key) return e.tally;
  }
  entries_.push_back({key, {}});
  index_[slot] = static_cast<uint32_t>(entries_.size());
  return entries_.back().tally;
}

void SampleCounts::grow() {
  std::vector<uint32_t> index(index_.empty() ? 1024 : index_.size() * 2, 0);
  const size_t mask = index.size() - 1;
  for (size_t i = 0; i < entries_.size(); ++i) {
    size_t slot = slot_of(entries_[i].key, mask);
    while (index[slot] != 0) slot = (slot + 1) & mask;
    index[slot] = static_cast<uint32_t>(i + 1);
  }
  index_ = std::move(index);
}

void SampleCounts::clear() {
  std::vector<Entry>().swap(entries_);
  std::vector<uint32_t>().swap(index_);
}

}  // namespace profiling::outside
