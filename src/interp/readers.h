// Two MemoryReaders (frames.h) for the interpreter walkers.
//
// ASYNC-SIGNAL-SAFE: both read() (one process_vm_readv system call, or one
// memcpy). The fault-safe reader of the program's own memory, for a
// handler that may meet a frame freed under it, is the sampler's to build on
// base/safe_access.h; LocalMemory is for tests and for memory known mapped.
#ifndef PROFIL_INTERP_READERS_H
#define PROFIL_INTERP_READERS_H

#include <sys/types.h>

#include <cstdint>

#include "interp/frames.h"

namespace profiling::interp {

// Another process's memory (process_vm_readv: needs ptrace access to it,
// as profil's outside sampler already has). Counts its calls.
class ProcessMemory final : public MemoryReader {
 public:
  explicit ProcessMemory(pid_t pid) : pid_(pid) {}
  bool read(uint64_t address, void* out, size_t size) override;
  uint64_t calls() const { return calls_; }

 private:
  pid_t pid_;
  uint64_t calls_ = 0;
};

// Another reader's memory, a page at a time: a read is served from the
// pages already fetched for this walk, else the aligned pages it spans are
// fetched in one call of the reader beneath. CPython 3.11+ keeps a
// thread's frames one after another in its data stack, so a whole stack
// costs a call or two instead of one per frame (the frames' code objects
// share pages too). forget() between samples: the memory moves on.
// ASYNC-SIGNAL-SAFE: fixed arrays, no allocation.
class PageCachedMemory final : public MemoryReader {
 public:
  static constexpr size_t kPage = 4096;
  static constexpr size_t kPages = 16;
  explicit PageCachedMemory(MemoryReader& below) : below_(below) {}
  bool read(uint64_t address, void* out, size_t size) override;
  void forget() { used_ = 0; }
  // The pages read since forget() (their addresses, at most max, in the
  // order first read while fewer than kPages): what a caller may fetch
  // ahead of the next walk of the same stack (PrefetchedMemory).
  size_t pages(uint64_t* out, size_t max) const {
    size_t n = 0;
    for (; n < used_ && n < max; ++n) out[n] = addresses_[n];
    return n;
  }

 private:
  // The page at page_address, fetched if it is not here yet; nullptr when
  // it cannot be read.
  const uint8_t* page(uint64_t page_address);

  MemoryReader& below_;
  uint64_t addresses_[kPages] = {};
  uint8_t pages_[kPages][kPage];
  size_t used_ = 0, next_ = 0;
};

// Another process's memory read ahead of a walk (issue 34's cost): the
// ranges the caller expects the walk to read (the last walk's, say) fetched
// by fetch() in ONE process_vm_readv, an iovec per range; a read inside a
// range fetched is a memcpy, any other goes to the reader beneath. Each
// call pays the kernel's mm and ptrace checks (~12 µs a call on this loaded
// 2-core machine, strace): a Ruby sample read page by page made 7.5 calls.
// A range cut short (unmapped past some page) holds what was read.
// ASYNC-SIGNAL-SAFE: fixed arrays, one system call.
class PrefetchedMemory final : public MemoryReader {
 public:
  struct Range {
    uint64_t address = 0;
    size_t size = 0;
  };
  static constexpr size_t kRanges = 8;
  static constexpr size_t kBytes = 65536;
  PrefetchedMemory(pid_t pid, MemoryReader& below) : pid_(pid), below_(below) {}
  // Forgets what was fetched, then fetches the ranges (at most kRanges, cut
  // at kBytes in all) in one call.
  void fetch(const Range* ranges, size_t count);
  bool read(uint64_t address, void* out, size_t size) override;
  uint64_t calls() const { return calls_; }

 private:
  struct Held {
    uint64_t address;
    size_t size, at;  // its bytes at bytes_ + at
  };
  pid_t pid_;
  MemoryReader& below_;
  Held held_[kRanges] = {};
  size_t count_ = 0;
  uint64_t calls_ = 0;
  uint8_t bytes_[kBytes];
};

// This process's memory, by memcpy: every address read must be mapped.
class LocalMemory final : public MemoryReader {
 public:
  bool read(uint64_t address, void* out, size_t size) override;
};

}  // namespace profiling::interp

#endif  // PROFIL_INTERP_READERS_H
