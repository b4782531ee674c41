// ASYNC-SIGNAL-SAFE (readers.h).
#include "interp/readers.h"

#include <sys/uio.h>

#include <cstring>

namespace profiling::interp {

bool ProcessMemory::read(uint64_t address, void* out, size_t size) {
  ++calls_;
  iovec local{out, size};
  iovec remote{reinterpret_cast<void*>(address), size};
  return ::process_vm_readv(pid_, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(size);
}

const uint8_t* PageCachedMemory::page(uint64_t page_address) {
  for (size_t i = 0; i < used_; ++i)
    if (addresses_[i] == page_address) return pages_[i];
  // Full: the oldest page goes (a walk reads outward, rarely back).
  const bool fresh = used_ < kPages;
  const size_t slot = fresh ? used_ : next_++ % kPages;
  if (!below_.read(page_address, pages_[slot], kPage)) {
    if (!fresh) addresses_[slot] = 1;  // no page starts there
    return nullptr;
  }
  if (fresh) ++used_;
  addresses_[slot] = page_address;
  return pages_[slot];
}

bool PageCachedMemory::read(uint64_t address, void* out, size_t size) {
  auto* bytes = static_cast<uint8_t*>(out);
  while (size > 0) {
    const uint64_t base = address & ~uint64_t{kPage - 1};
    const uint8_t* p = page(base);
    // A page that cannot be read whole (the end of a mapping): the bytes
    // asked for, straight from below.
    if (p == nullptr) return below_.read(address, bytes, size);
    const size_t offset = address - base, n = size < kPage - offset ? size : kPage - offset;
    std::memcpy(bytes, p + offset, n);
    bytes += n;
    address += n;
    size -= n;
  }
  return true;
}

void PrefetchedMemory::fetch(const Range* ranges, size_t count) {
  iovec local[kRanges], remote[kRanges];
  size_t n = 0, at = 0;
  for (size_t i = 0; i < count && n < kRanges && at < kBytes; ++i) {
    const size_t size = ranges[i].size < kBytes - at ? ranges[i].size : kBytes - at;
    if (size == 0) continue;
    held_[n] = Held{ranges[i].address, size, at};
    local[n] = iovec{bytes_ + at, size};
    remote[n] = iovec{reinterpret_cast<void*>(ranges[i].address), size};
    at += size;
    ++n;
  }
  count_ = 0;
  if (n == 0) return;
  ++calls_;
  const ssize_t got = ::process_vm_readv(pid_, local, n, remote, n, 0);
  if (got <= 0) return;
  // The ranges are filled in order: those past what was read hold nothing.
  for (size_t i = 0; i < n && held_[i].at < static_cast<size_t>(got); ++i, ++count_)
    if (held_[i].at + held_[i].size > static_cast<size_t>(got)) held_[i].size = static_cast<size_t>(got) - held_[i].at;
}

bool PrefetchedMemory::read(uint64_t address, void* out, size_t size) {
  for (size_t i = 0; i < count_; ++i) {
    const Held& h = held_[i];
    if (address >= h.address && size <= h.size && address - h.address <= h.size - size) {
      std::memcpy(out, bytes_ + h.at + (address - h.address), size);
      return true;
    }
  }
  return below_.read(address, out, size);
}

bool LocalMemory::read(uint64_t address, void* out, size_t size) {
  if (address == 0) return false;
  std::memcpy(out, reinterpret_cast<const void*>(address), size);
  return true;
}

}  // namespace profiling::interp
