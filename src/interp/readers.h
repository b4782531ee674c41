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

// This process's memory, by memcpy: every address read must be mapped.
class LocalMemory final : public MemoryReader {
 public:
  bool read(uint64_t address, void* out, size_t size) override;
};

}  // namespace profiling::interp

#endif  // PROFIL_INTERP_READERS_H
