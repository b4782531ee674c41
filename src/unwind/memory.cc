// ASYNC-SIGNAL-SAFE: LiveMemory::read is one fault-safe load.
#include "unwind/memory.h"

#include "base/safe_access.h"

namespace profiling::unwind {

bool LiveMemory::read(uint64_t address, uint64_t* value) const {
  return profil_safe_load_u64(reinterpret_cast<const void*>(address), value) == 0;
}

}  // namespace profiling::unwind
