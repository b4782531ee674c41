// ASYNC-SIGNAL-SAFE: add() and for_each() (see stack_table.h); create,
// destroy and clear are setup-time only.
#include "unwind/stack_table.h"

#include <new>

#include "base/mapped_table.h"

namespace profiling::unwind {
namespace {

uint64_t hash_stack(const uint64_t* pcs, uint32_t depth, bool truncated, int32_t tid) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t{depth} << 1) ^ (truncated ? 1 : 0) ^
               (uint64_t{static_cast<uint32_t>(tid)} << 20);
  for (uint32_t i = 0; i < depth; ++i) {
    h ^= pcs[i];
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 32;
  }
  return h == 0 ? 1 : h;
}

constexpr size_t kMaxProbes = 64;
constexpr uint32_t kMaxDepth = 0xffff;

}  // namespace

StackTable* StackTable::create(size_t stacks, size_t frames) {
  const size_t slots = base::round_up_pow2(stacks < 64 ? 64 : stacks);
  if (frames < 64) frames = 64;
  if (frames >= (uint64_t{1} << 40)) return nullptr;
  if (slots > (uint64_t{1} << 31)) return nullptr;
  size_t bytes = 0;
  void* memory = base::map_table<StackTable>(
      slots * sizeof(Slot) + slots * sizeof(uint32_t) + frames * sizeof(uint64_t), &bytes);
  if (memory == nullptr) return nullptr;
  auto* table = new (memory) StackTable();
  table->mask_ = slots - 1;
  table->mapped_bytes_ = bytes;
  table->frame_capacity_ = frames;
  // Every slot starts empty (zero pages); untouched pages of the frame
  // pool cost nothing.
  table->slots_ = reinterpret_cast<Slot*>(base::mapped_arrays(table));
  table->order_ = reinterpret_cast<std::atomic<uint32_t>*>(table->slots_ + slots);
  table->frames_ = reinterpret_cast<uint64_t*>(table->order_ + slots);
  return table;
}

void StackTable::destroy(StackTable* table) {
  if (table != nullptr) base::destroy_mapped(table, table->mapped_bytes_);
}

size_t StackTable::frames_used() const {
  const uint64_t used = frames_used_.load(std::memory_order_relaxed);
  return used < frame_capacity_ ? used : frame_capacity_;
}

bool StackTable::matches(const Slot& slot, uint64_t info, const uint64_t* pcs, uint32_t depth, bool truncated,
                         int32_t tid) const {
  if (depth_of(info) != depth || ((info & kTruncated) != 0) != truncated) return false;
  if (slot.tid.load(std::memory_order_relaxed) != tid) return false;
  const uint64_t* stored = frames_ + frames_of(info);
  for (uint32_t i = 0; i < depth; ++i)
    if (stored[i] != pcs[i]) return false;
  return true;
}

void StackTable::add(const uint64_t* pcs, uint32_t depth, bool truncated, uint64_t weight, int32_t tid) {
  if (depth == 0 || depth > kMaxDepth) {
    dropped_samples_.fetch_add(1, std::memory_order_relaxed);
    dropped_weight_.fetch_add(weight, std::memory_order_relaxed);
    return;
  }
  const uint64_t hash = hash_stack(pcs, depth, truncated, tid);
  uint64_t reserved = UINT64_MAX;  // frames taken from the pool for a new slot
  size_t slot_index = static_cast<size_t>(hash) & mask_;
  for (size_t probe = 0; probe < kMaxProbes && probe <= mask_; ++probe, slot_index = (slot_index + 1) & mask_) {
    Slot& slot = slots_[slot_index];
    uint64_t seen = slot.hash.load(std::memory_order_acquire);
    if (seen == 0) {
      if (reserved == UINT64_MAX) {
        reserved = frames_used_.fetch_add(depth, std::memory_order_relaxed);
        if (reserved + depth > frame_capacity_) break;  // the pool is full
        for (uint32_t i = 0; i < depth; ++i) frames_[reserved + i] = pcs[i];
      }
      uint64_t expected = 0;
      if (slot.hash.compare_exchange_strong(expected, hash, std::memory_order_acq_rel)) {
        slot.weight.fetch_add(weight, std::memory_order_relaxed);
        slot.observations.fetch_add(1, std::memory_order_relaxed);
        slot.tid.store(tid, std::memory_order_relaxed);
        // Published last: a reader that sees kReady sees the frames.
        slot.info.store((reserved << 24) | (uint64_t{depth} << 8) | (truncated ? kTruncated : 0) | kReady,
                        std::memory_order_release);
        // Each slot is taken once, so the count never passes the slots.
        const uint64_t n = slots_taken_.fetch_add(1, std::memory_order_acq_rel);
        order_[n].store(static_cast<uint32_t>(slot_index + 1), std::memory_order_release);
        return;
      }
      seen = expected;  // another thread claimed the slot first
    }
    if (seen != hash) continue;
    const uint64_t info = slot.info.load(std::memory_order_acquire);
    // Still being written by its inserter: no waiting in a signal handler,
    // look further (the stack may then get a second slot).
    if (!(info & kReady)) continue;
    if (matches(slot, info, pcs, depth, truncated, tid)) {
      slot.weight.fetch_add(weight, std::memory_order_relaxed);
      slot.observations.fetch_add(1, std::memory_order_relaxed);  // same cache line
      return;  // frames reserved in a lost race stay unused
    }
  }
  dropped_samples_.fetch_add(1, std::memory_order_relaxed);
  dropped_weight_.fetch_add(weight, std::memory_order_relaxed);
}

void StackTable::clear() {
  // Fresh zero pages instead of writing zeros over what was used
  // (base/mapped_table.h).
  base::clear_mapped_arrays(this, mapped_bytes_, mask_ + 1, [this](size_t i) {
    slots_[i].hash.store(0, std::memory_order_relaxed);
    slots_[i].info.store(0, std::memory_order_relaxed);
    slots_[i].weight.store(0, std::memory_order_relaxed);
    slots_[i].tid.store(0, std::memory_order_relaxed);
    slots_[i].observations.store(0, std::memory_order_relaxed);
    order_[i].store(0, std::memory_order_relaxed);
  });
  slots_taken_.store(0, std::memory_order_relaxed);
  frames_used_.store(0, std::memory_order_relaxed);
  dropped_samples_.store(0, std::memory_order_relaxed);
  dropped_weight_.store(0, std::memory_order_relaxed);
}

}  // namespace profiling::unwind
