// build() and from_objects() are NOT async-signal-safe; find() and
// object_of() are ASYNC-SIGNAL-SAFE (a binary search over an immutable
// array, the cache's atomics, internal::row_at's fault-safe reads).
#include "unwind/code_table.h"

#include <link.h>
#include <sys/mman.h>

#include <algorithm>

#include "unwind/internal/cfi.h"
#include "unwind/memory.h"

namespace profiling::unwind {
namespace {

struct BuildContext {
  const CodeTable* previous;
  std::vector<std::shared_ptr<const ObjectTable>>* objects;
};

std::shared_ptr<const ObjectTable> reuse(const CodeTable* previous, const ObjectTable& now) {
  if (previous == nullptr) return nullptr;
  for (const auto& object : previous->objects())
    if (object->start == now.start && object->end == now.end && object->eh_frame_hdr == now.eh_frame_hdr &&
        object->eh_frame_limit == now.eh_frame_limit)
      return object;
  return nullptr;
}

// Called with the loader's lock held (dl_iterate_phdr(3)).
int visit_object(dl_phdr_info* info, size_t, void* opaque) {
  auto* context = static_cast<BuildContext*>(opaque);
  ObjectTable object;
  object.start = UINT64_MAX;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
      object.start = std::min<uint64_t>(object.start, info->dlpi_addr + ph.p_vaddr);
      object.end = std::max<uint64_t>(object.end, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
    } else if (ph.p_type == PT_GNU_EH_FRAME) {
      object.eh_frame_hdr = info->dlpi_addr + ph.p_vaddr;
    }
  }
  if (object.start >= object.end) return 0;  // no code
  if (object.eh_frame_hdr != 0) {
    // The .eh_frame follows its header in a loaded segment; no CIE or FDE
    // is read beyond that segment's file bytes.
    for (int i = 0; i < info->dlpi_phnum; ++i) {
      const ElfW(Phdr)& ph = info->dlpi_phdr[i];
      const uint64_t segment = info->dlpi_addr + ph.p_vaddr;
      if (ph.p_type == PT_LOAD && object.eh_frame_hdr >= segment && object.eh_frame_hdr < segment + ph.p_memsz)
        object.eh_frame_limit = segment + ph.p_filesz;
    }
    if (object.eh_frame_limit <= object.eh_frame_hdr) object.eh_frame_hdr = object.eh_frame_limit = 0;
  }
  if (auto same = reuse(context->previous, object)) {
    context->objects->push_back(std::move(same));
    return 0;
  }
  object.name = info->dlpi_name != nullptr ? info->dlpi_name : "";
  context->objects->push_back(std::make_shared<const ObjectTable>(std::move(object)));
  return 0;
}

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

std::unique_ptr<CodeTable> CodeTable::build(const CodeTable* previous) {
  std::vector<std::shared_ptr<const ObjectTable>> objects;
  BuildContext context{previous, &objects};
  dl_iterate_phdr(visit_object, &context);
  return from_objects(std::move(objects));
}

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
  Row found{0, 0, 0, Rule::kNone, RbpRule::kUnchanged};
  internal::RowLookup result = internal::RowLookup::kNoFde;
  if (object->eh_frame_hdr != 0) {
    const LiveMemory live;
    const MemoryReader& memory = object->image != nullptr ? *object->image : static_cast<const MemoryReader&>(live);
    result = internal::row_at(memory, object->eh_frame_hdr, object->eh_frame_limit, pc, &found);
  }
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
