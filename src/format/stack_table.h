// A profile's caller chains, each stored once (format::Profile::stacks,
// Timeline::stacks). Split from profile.h, whose room it outgrew.
#ifndef PROFIL_FORMAT_STACK_TABLE_H
#define PROFIL_FORMAT_STACK_TABLE_H

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace profiling::format {

// The caller chains of a profile, each stored once: a Sample names its
// leaf itself and its callers by id here, so samples of one call path at
// several leaf addresses share a chain. Callers are innermost first, each
// an address inside the call instruction (return address - 1, as pprof's
// locations are), so that every frame symbolizes as it is. A chain can be
// truncated: the unwinder stopped before the outermost frame.
//
// Memory: 8 bytes per frame of each distinct chain, 8 per chain, and 8 per
// chain of open-addressing index (ids only; keys are the frames themselves).
class StackTable {
 public:
  static constexpr uint32_t kNoCallers = 0;

  // The id of (callers, truncated), added when new. kNoCallers for an empty,
  // complete chain. Throws FormatError past 2^32-1 chains.
  uint32_t intern(std::span<const uint64_t> callers, bool truncated);
  // Frames of chain `id` (empty for kNoCallers); valid until the next intern.
  std::span<const uint64_t> callers(uint32_t id) const;
  bool truncated(uint32_t id) const { return id != kNoCallers && (ends_[id - 1] & 1); }
  // The id of (callers, truncated) when the table holds it, else UINT32_MAX.
  uint32_t find(std::span<const uint64_t> callers, bool truncated) const;
  size_t size() const { return ends_.size(); }  // chains besides kNoCallers
  size_t frame_count() const { return frames_.size(); }
  bool empty() const { return ends_.empty(); }

  // Same chains under the same ids (the index is not compared).
  friend bool operator==(const StackTable& a, const StackTable& b) {
    return a.frames_ == b.frames_ && a.ends_ == b.ends_;
  }

 private:
  void grow_index();

  std::vector<uint64_t> frames_;  // every chain's frames, one after another
  std::vector<uint64_t> ends_;    // per chain: (end in frames_) << 1 | truncated
  std::vector<uint32_t> index_;   // open addressing: chain id, 0 empty
};

}  // namespace profiling::format

#endif  // PROFIL_FORMAT_STACK_TABLE_H
