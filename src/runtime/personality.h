// Whose profil(2) semantics the C API follows (docs/personalities.md).
#ifndef PROFIL_RUNTIME_PERSONALITY_H
#define PROFIL_RUNTIME_PERSONALITY_H

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "profil/profil.h"
#include "sampler/bins.h"

namespace profiling::runtime {

// The rules of one system's profil(2), from its manual page.
struct PersonalityRules {
  bool scale_one_turns_off;    // Solaris, OSF/1: "turned off by giving a scale of ... 1"
  unsigned max_scale;          // larger is EINVAL
  sampler::BinArithmetic arithmetic;
  sampler::BinLimit limit;     // Solaris: a count reaching 32767 stops profiling
  bool second_buffer_ealready; // OpenBSD 2025: "An attempt was made to change the profile buffer"
};

PersonalityRules rules_for(profil_personality personality);

// The personality in force: set by profil_set_personality(), else
// PROFIL_PERSONALITY, else bsd.
profil_personality current_personality();

// True when [address, address + size) is mapped writable in this process
// (read from /proc/self/maps; nothing is written to the buffer).
bool memory_is_writable(const void* address, size_t size);

// The process's writable ranges read from /proc/self/maps once, for
// checking many buffers: sprofil() with 10^6 regions read the maps 10^6
// times (issue 11).
class WritableMemory {
 public:
  WritableMemory();
  bool covers(const void* address, size_t size) const;

 private:
  std::vector<std::pair<uintptr_t, uintptr_t>> ranges_;  // [lo, hi), sorted, neighbours merged
};

void set_personality(profil_personality personality);

}  // namespace profiling::runtime

#endif  // PROFIL_RUNTIME_PERSONALITY_H
