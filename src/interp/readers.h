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

 private:
  // The page at page_address, fetched if it is not here yet; nullptr when
  // it cannot be read.
  const uint8_t* page(uint64_t page_address);

  MemoryReader& below_;
  uint64_t addresses_[kPages] = {};
  uint8_t pages_[kPages][kPage];
  size_t used_ = 0, next_ = 0;
};

// This process's memory, by memcpy: every address read must be mapped.
class LocalMemory final : public MemoryReader {
 public:
  bool read(uint64_t address, void* out, size_t size) override;
};

}  // namespace profiling::interp

#endif  // PROFIL_INTERP_READERS_H
