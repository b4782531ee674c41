// libFuzzer target for read_profraw: any bytes either decode or raise
// FormatError — never a crash, a sanitizer report or another exception.
// What decodes must agree with itself: the header alone reads the same,
// decode_profraw gives the same profile, and every sample's count is one
// the file holds.
#include <algorithm>
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
  // The unsampled records become at most one named row each.
  Profile with_rows = decoded.profile;
  add_unsampled_rows(decoded, &with_rows);
  if (with_rows.samples.size() > decoded.profile.samples.size() + decoded.unsampled.size()) std::abort();
  if (!std::is_sorted(with_rows.samples.begin(), with_rows.samples.end(),
                      [](const Sample& a, const Sample& b) { return a.address < b.address; }))
    std::abort();
  return 0;
}
