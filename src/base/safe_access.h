// Stores into user buffers that survive the buffer going away.
//
// ASYNC-SIGNAL-SAFE: these are leaf assembly routines (safe_access.S) that
// touch nothing but their arguments. A fault inside them (the buffer was
// unmapped or made read-only while profiling) does not kill the process: the
// fault guard (on_fault in sampler/handler.cc) sees the faulting instruction lies in this
// code, resumes at a landing pad that returns kSafeAccessFault, and the
// handler turns profiling off — "profiling is turned off if a buffer update
// would cause a memory fault" (Solaris, OSF/1 profil(2)); NetBSD's EFAULT.
// This is the kernel's exception-table technique, moved to user space.
//
// In base/ (issue 21), below the sampler that counts through it and the
// unwinder that reads stacks through it: neither has to include a layer
// above its own.
#ifndef PROFIL_BASE_SAFE_ACCESS_H
#define PROFIL_BASE_SAFE_ACCESS_H

#include <cstdint>

extern "C" {
// Adds weight to *bin, clamping at limit, atomically against other threads.
// Returns 0, kSafeAccessAtLimit when the bin now holds limit, or
// kSafeAccessFault when the bin could not be read or written.
int profil_safe_add_u16(uint16_t* bin, uint32_t weight, uint32_t limit);
int profil_safe_add_u32(uint32_t* bin, uint32_t weight, uint32_t limit);
// *slot = value; 0 or kSafeAccessFault.
int profil_safe_store_u64(uint64_t* slot, uint64_t value);
// *value = *from (unaligned allowed); 0 or kSafeAccessFault, *value untouched
// on a fault. value must be the caller's own memory (it is not guarded).
int profil_safe_load_u64(const void* from, uint64_t* value);

// The histogram fast path's bin increment: saturating, atomic, returning
// nothing. Jumped to as deliver()'s last act; a fault turns the histogram
// off through profil_histogram_fault(table, weight) (sinks.cc).
void profil_safe_count_u16(uint16_t* bin, uint32_t weight, void* table);
void profil_safe_count_u32(uint32_t* bin, uint32_t weight, void* table);

// The code ranges of the routines above and their landing pads.
extern const char profil_safe_access_begin[];
extern const char profil_safe_access_end[];
extern const char profil_safe_access_fault[];
extern const char profil_safe_count_begin[];
extern const char profil_safe_count_end[];
extern const char profil_safe_count_fault[];
}

namespace profiling::base {
inline constexpr int kSafeAccessAtLimit = 1;
inline constexpr int kSafeAccessFault = -1;

inline bool in_safe_access_code(uintptr_t pc) {
  return pc >= reinterpret_cast<uintptr_t>(profil_safe_access_begin) &&
         pc < reinterpret_cast<uintptr_t>(profil_safe_access_end);
}

// Where a fault at pc resumes, or 0 when pc is not in the code above.
inline uintptr_t safe_access_landing_pad(uintptr_t pc) {
  if (in_safe_access_code(pc)) return reinterpret_cast<uintptr_t>(profil_safe_access_fault);
  if (pc >= reinterpret_cast<uintptr_t>(profil_safe_count_begin) &&
      pc < reinterpret_cast<uintptr_t>(profil_safe_count_end))
    return reinterpret_cast<uintptr_t>(profil_safe_count_fault);
  return 0;
}
}  // namespace profiling::base

#endif  // PROFIL_BASE_SAFE_ACCESS_H
