// from_objects() is NOT async-signal-safe; find() and object_of() are
// ASYNC-SIGNAL-SAFE (a binary search over an immutable array, the cache's
// atomics, internal::row_at's reads through the object's MemoryReader).
// build(), over this process's own objects, is in code_table_live.cc: the
// outside sampler links this file without the fault-safe loads.
#include "unwind/code_table.h"

#include <sys/mman.h>

#include <algorithm>

#include "unwind/internal/cfi.h"
#include "unwind/memory.h"

namespace profiling::unwind {
namespace {

uint64_t pack(const Row& row) {
  return static_cast<uint64_t>(static_cast<uint32_t>(row.cfa_offset)) |
         static_cast<uint64_t>(static_cast<uint16_t>(row.rbp_offset)) << 32 |
         static_cast<uint64_t>(row.rule) << 48 | static_cast<uint64_t>(row.rbp) << 56;
}

Row unpack(uint64_t bits) {
  Row row{};
  row.cfa_offset = static_cast<int32_t>(static_cast<uint32_t>(bits));
  row.rbp_offset = static_cast<int16_t>(static_cast<uint16_t>(bits >> 32));
  row.rule = static_cast<Rule>(static_cast<uint8_t>(bits >> 48));
  row.rbp = static_cast<RbpRule>(static_cast<uint8_t>(bits >> 56));
  return row;
}

}  // namespace

std::unique_ptr<CodeTable> CodeTable::from_objects(std::vector<std::shared_ptr<const ObjectTable>> objects) {
  std::sort(objects.begin(), objects.end(), [](const auto& a, const auto& b) { return a->start < b->start; });
  // Overlapping objects cannot be told apart by address: the first keeps its range.
  std::vector<std::shared_ptr<const ObjectTable>> disjoint;
  for (auto& object : objects)
    if (disjoint.empty() || object->start >= disjoint.back()->end) disjoint.push_back(std::move(object));
  auto table = std::unique_ptr<CodeTable>(new CodeTable());
  table->objects_ = std::move(disjoint);
  table->map_cache();
  return table;
}

void CodeTable::map_cache() {
  void* memory = ::mmap(nullptr, kCacheEntries * sizeof(CacheEntry), PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  // Fresh pages are zero: every key empty. Without a cache every lookup
  // interprets the CFI.
  cache_ = memory == MAP_FAILED ? nullptr : static_cast<CacheEntry*>(memory);
}

CodeTable::~CodeTable() {
  if (cache_ != nullptr) ::munmap(cache_, kCacheEntries * sizeof(CacheEntry));
}

const ObjectTable* CodeTable::object_of(uint64_t pc) const {
  size_t lo = 0, hi = objects_.size();
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    const ObjectTable* object = objects_[mid].get();
    if (pc < object->start) hi = mid;
    else if (pc >= object->end) lo = mid + 1;
    else return object;
  }
  return nullptr;
}

bool CodeTable::find(uint64_t pc, Row* row) const {
  const ObjectTable* object = object_of(pc);
  if (object == nullptr) return false;
  CacheEntry* entry = nullptr;
  if (cache_ != nullptr) {
    // Fibonacci hashing: return addresses cluster.
    entry = &cache_[(pc * 0x9E3779B97F4A7C15ull) >> (64 - 14)];
    static_assert(kCacheEntries == 1u << 14);
    // A reader takes the row between two reads of the same key: a writer
    // that replaced the entry meanwhile changed the key.
    if (entry->key.load(std::memory_order_acquire) == pc) {
      const uint64_t bits = entry->row.load(std::memory_order_acquire);
      if (entry->key.load(std::memory_order_acquire) == pc) {
        *row = unpack(bits);
        return true;
      }
    }
  }
  if (object->rows != nullptr && !object->rows->empty()) {
    // Rows of the whole object: the last that starts at or before pc.
    const std::vector<Row>& rows = *object->rows;
    const uint64_t offset = pc - object->start;
    auto after = std::upper_bound(rows.begin(), rows.end(), offset,
                                  [](uint64_t at, const Row& r) { return at < r.start; });
    *row = after == rows.begin() ? Row{0, 0, 0, Rule::kNone, RbpRule::kUnchanged} : *(after - 1);
    return true;
  }
  Row found{0, 0, 0, Rule::kNone, RbpRule::kUnchanged};
  internal::RowLookup result = internal::RowLookup::kNoFde;
  if (object->eh_frame_hdr != 0 && object->image != nullptr)
    result = internal::row_at(*object->image, object->eh_frame_hdr, object->eh_frame_limit, pc, &found);
  if (result == internal::RowLookup::kNoFde) found = Row{0, 0, 0, Rule::kNone, RbpRule::kUnchanged};
  if (result == internal::RowLookup::kUnreadable) {
    // Not cached: an object being unloaded, or memory that may read later.
    *row = Row{0, 0, 0, Rule::kFramePointer, RbpRule::kUnchanged};
    return true;
  }
  if (entry != nullptr) {
    // A try-lock: a handler that finds the entry being written by another
    // thread (or by the thread it interrupted) leaves it.
    uint64_t seen = entry->key.load(std::memory_order_relaxed);
    if (seen != kLockedKey &&
        entry->key.compare_exchange_strong(seen, kLockedKey, std::memory_order_acquire, std::memory_order_relaxed)) {
      std::atomic_thread_fence(std::memory_order_release);  // the lock before the row
      entry->row.store(pack(found), std::memory_order_release);
      entry->key.store(pc, std::memory_order_release);
    }
  }
  *row = found;
  return true;
}

}  // namespace profiling::unwind
