// One process image's samples since the last take, tallied by SampleKey
// (sample_stack.h): its periods and its observations (records) per key.
//
// Why not std::unordered_map: a node per key and a bucket array meant two
// dependent cache misses and, for each new key, an allocation on the
// reader's path of every sample; the tally was 18 % of the reader's CPU on
// xz at 4 kHz (profil run --outside on it at 10 kHz; issue 32). Here the
// entries lie in one array, found through an open-addressing index of
// 32-bit slots (as format::StackTable's), at most half full.
//
// NOT async-signal-safe, not thread-safe: the process table's (under the
// sampler's lock).
#ifndef PROFIL_OUTSIDE_SAMPLE_COUNTS_H
#define PROFIL_OUTSIDE_SAMPLE_COUNTS_H

#include <cstdint>
#include <vector>

#include "outside/sample_stack.h"

namespace profiling::outside {

class SampleCounts {
 public:
  struct Tally {
    uint64_t periods = 0, observations = 0;
  };
  struct Entry {
    SampleKey key;
    Tally tally;
  };

  // The key's tally, zero when new.
  Tally& operator[](const SampleKey& key);
  // Every key once, in the order first seen.
  std::vector<Entry>::const_iterator begin() const { return entries_.begin(); }
  std::vector<Entry>::const_iterator end() const { return entries_.end(); }
  size_t size() const { return entries_.size(); }
  // Forgets every key; the memory goes too (hours attached: a window's
  // peak is not kept for the next).
  void clear();

 private:
  void grow();

  std::vector<Entry> entries_;
  std::vector<uint32_t> index_;  // entry + 1, 0 empty; a power of two
};

}  // namespace profiling::outside

#endif  // PROFIL_OUTSIDE_SAMPLE_COUNTS_H
