// Stores into user buffers that survive the buffer going away.
//
// ASYNC-SIGNAL-SAFE: these are leaf assembly routines (safe_access.S) that
// touch nothing but their arguments. A fault inside them (the buffer was
// unmapped or made read-only while profiling) does not kill the process: the
// fault guard (fault_guard.cc) sees the faulting instruction lies in this
// code, resumes at a landing pad that returns kSafeAccessFault, and the
// handler turns profiling off — "profiling is turned off if a buffer update
// would cause a memory fault" (Solaris, OSF/1 profil(2)); NetBSD's EFAULT.
// This is the kernel's exception-table technique, moved to user space.
#ifndef PROFIL_SAMPLER_SAFE_ACCESS_H
#define PROFIL_SAMPLER_SAFE_ACCESS_H

#include <cstdint>

extern "C" {
// Adds weight to *bin, clamping at limit, atomically against other threads.
// Returns 0, kSafeAccessAtLimit when the bin now holds limit, or
// kSafeAccessFault when the bin could not be read or written.
int profil_safe_add_u16(uint16_t* bin, uint32_t weight, uint32_t limit);
int profil_safe_add_u32(uint32_t* bin, uint32_t weight, uint32_t limit);
// *slot = value; 0 or kSafeAccessFault.
int profil_safe_store_u64(uint64_t* slot, uint64_t value);

// The code range of the routines above and the landing pad (safe_access.S).
extern const char profil_safe_access_begin[];
extern const char profil_safe_access_end[];
extern const char profil_safe_access_fault[];
}

namespace profiling::sampler {
inline constexpr int kSafeAccessAtLimit = 1;
inline constexpr int kSafeAccessFault = -1;

inline bool in_safe_access_code(uintptr_t pc) {
  return pc >= reinterpret_cast<uintptr_t>(profil_safe_access_begin) &&
         pc < reinterpret_cast<uintptr_t>(profil_safe_access_end);
}
}  // namespace profiling::sampler

#endif  // PROFIL_SAMPLER_SAFE_ACCESS_H
