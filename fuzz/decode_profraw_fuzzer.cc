// libFuzzer target for read_profraw: any bytes either decode or raise
// FormatError — never a crash, a sanitizer report or another exception.
// What decodes must agree with itself: the header alone reads the same,
// decode_profraw gives the same profile, and every sample's count is one
// the file holds.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "format/profraw.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace profiling::format;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  ProfrawData decoded;
  try {
    decoded = read_profraw(bytes);
  } catch (const FormatError&) {
    return 0;
  }
  const profraw::Header header = read_profraw_header(bytes);  // must not throw now
  if (static_cast<int64_t>(decoded.profile.pid) != header.pid || decoded.hz != header.hz) std::abort();
  if (decode_profraw(bytes).samples != decoded.profile.samples) std::abort();
  if (decoded.maps.size() != header.maps_length) std::abort();
  return 0;
}
