// Reading a perf ring buffer: the records the kernel wrote between the
// reader's tail and the kernel's head, each whole, across the buffer's
// wrap (perf_event_open(2), "MMAP layout"; perf's tools/perf/util/mmap.c).
//
// ASYNC-SIGNAL-SAFE: walk_records() and RingReader (no allocation, no
// locks; a record that wraps is made whole in the caller's scratch). The
// preload's ring engine drains rings in its signal handler; the outside
// sampler reads them from its own thread. One reader per ring at a time.
#ifndef PROFIL_PERF_RING_H
#define PROFIL_PERF_RING_H

#include <linux/perf_event.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace profiling::perf {

// One record, whole: bytes[0..size) starting with its header.
struct Record {
  perf_event_header header;
  const uint8_t* bytes;
  size_t size;
};

struct WalkResult {
  uint32_t records = 0;  // visited
  // Records that wrapped around the end and were larger than the scratch:
  // skipped, their bytes not seen.
  uint32_t too_large = 0;
  // A header no kernel writes (size 0, smaller than a header, larger than
  // the buffer): the walk stopped there and the tail went to head, never
  // spinning on a broken ring.
  bool broken = false;
};

// How many records ahead walk_records() asks for a header.
inline constexpr uint64_t kRecordsAhead = 8;

// Walks the records of data[0..data_size) (a power of two) from *tail to
// head, both counting bytes ever written; *tail ends at head. Records are
// visited in place, or copied into scratch when they wrap around the end.
// visit(const Record&) returns nothing.
template <typename Visit>
WalkResult walk_records(const uint8_t* data, size_t data_size, uint64_t head, uint64_t* tail, uint8_t* scratch,
                        size_t scratch_size, Visit&& visit) {
  WalkResult result;
  uint64_t at_tail = *tail;
  while (at_tail < head) {
    Record record;
    const size_t at = static_cast<size_t>(at_tail & (data_size - 1));
    // Records are 8-aligned and a header is 8 bytes: a header never wraps.
    std::memcpy(&record.header, data + at, sizeof record.header);
    const size_t size = record.header.size;
    if (size < sizeof record.header || size > data_size || size > head - at_tail) {
      result.broken = true;
      at_tail = head;
      break;
    }
    record.size = size;
    // Each header says where the next begins, and each was written on the
    // sampled thread's CPU: read one after another, every header was a
    // miss in another core's cache (the outside's reader, issue 32). The
    // records of one ring mostly have one size (a sample's stack copy
    // keeps its room whatever it holds), so the header that many records
    // on is asked for now, guessed at this one's size: the misses overlap.
    // A wrong guess fetches a line of the ring for nothing.
    if (const uint64_t ahead = at_tail + kRecordsAhead * size; ahead < head)
      __builtin_prefetch(data + static_cast<size_t>(ahead & (data_size - 1)));
    if (size <= data_size - at) {
      record.bytes = data + at;
    } else if (scratch != nullptr && size <= scratch_size) {
      const size_t first = data_size - at;
      std::memcpy(scratch, data + at, first);
      std::memcpy(scratch + first, data, size - first);
      record.bytes = scratch;
    } else {
      ++result.too_large;
      at_tail += size;
      continue;
    }
    visit(static_cast<const Record&>(record));
    ++result.records;
    at_tail += size;
  }
  *tail = at_tail;
  return result;
}

// A mapped ring: its first page (perf_event_mmap_page) and data pages.
class RingReader {
 public:
  RingReader() = default;
  // mapping: what mmap of the event returned, 1 + 2^n pages.
  RingReader(void* mapping, size_t mapping_bytes)
      : page_(static_cast<perf_event_mmap_page*>(mapping)) {
    // Kernels before 4.1 leave data_offset 0: the data follows the page
    // (x86-64: 4 KiB).
    data_offset_ = page_->data_offset != 0 ? page_->data_offset : 4096;
    data_size_ = page_->data_size != 0 ? page_->data_size : mapping_bytes - 4096;
  }

  bool valid() const { return page_ != nullptr; }
  size_t data_size() const { return data_size_; }
  perf_event_mmap_page* page() const { return page_; }

  // Bytes written and not read yet.
  uint64_t pending() const { return __atomic_load_n(&page_->data_head, __ATOMIC_ACQUIRE) - page_->data_tail; }

  // For a reader that walks one stretch more than once (the outside
  // sampler reads every ring's task records before any ring's samples):
  // the data, the kernel's head (acquire: before the data is read), the
  // reader's tail, and handing [tail, to) back (release: after the reads).
  const uint8_t* data() const { return reinterpret_cast<const uint8_t*>(page_) + data_offset_; }
  uint64_t head() const { return __atomic_load_n(&page_->data_head, __ATOMIC_ACQUIRE); }
  uint64_t tail() const { return page_->data_tail; }
  void consume_to(uint64_t tail) { __atomic_store_n(&page_->data_tail, tail, __ATOMIC_RELEASE); }

  // Visits every record written since the last read, then hands their
  // space back to the kernel (data_tail, release: after the reads).
  template <typename Visit>
  WalkResult read(uint8_t* scratch, size_t scratch_size, Visit&& visit) {
    // perf_event_open(2): read data_head, then a read barrier before the data.
    uint64_t at = tail();
    const WalkResult result = walk_records(data(), data_size_, head(), &at, scratch, scratch_size, visit);
    consume_to(at);
    return result;
  }

 private:
  perf_event_mmap_page* page_ = nullptr;
  size_t data_offset_ = 0;
  size_t data_size_ = 0;
};

}  // namespace profiling::perf

#endif  // PROFIL_PERF_RING_H
