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

bool LocalMemory::read(uint64_t address, void* out, size_t size) {
  if (address == 0) return false;
  std::memcpy(out, reinterpret_cast<const void*>(address), size);
  return true;
}

}  // namespace profiling::interp
