// The variable parts of a profraw read back (profraw.h): the stack
// records spread over the pc table's samples, and the names of the
// interpreter frames they hold (version 6). Host side: allocates, throws
// FormatError.
#ifndef PROFIL_FORMAT_PROFRAW_STACKS_H
#define PROFIL_FORMAT_PROFRAW_STACKS_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "format/profile.h"

namespace profiling::format {

template <typename T>
T load(std::string_view bytes, size_t offset) {
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));  // x86-64: little-endian already
  return value;
}

// The stack records onto the pc table's samples (read_profraw's contract in
// profraw.h). samples: sorted, one per pc. A record whose leading frames
// are interpreter frames (merged at the dump) counts against the pair of
// its first native pc, the sampled one. known_flags: the record flags the
// file's version may set (version 7: the GIL's state, Sample::gil).
void spread_stacks(std::string_view records, uint64_t count, size_t record_size, uint32_t known_flags,
                   Profile* profile);

// The InterpreterFrameRecords (profraw_layout.h) into profile->frames.
void read_interpreter_frames(std::string_view records, uint64_t count, Profile* profile);

}  // namespace profiling::format

#endif  // PROFIL_FORMAT_PROFRAW_STACKS_H
