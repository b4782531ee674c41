// libFuzzer target for decode_gmon: any bytes either decode or raise
// FormatError — never a crash, a sanitizer report or another exception. What
// decodes must survive re-encoding in its own flavour unchanged (unless the
// writer refuses it, e.g. rate 0), and convert to a Profile.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "format/gmon.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace profiling::format;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  GmonFlavor flavor;
  GmonData decoded;
  try {
    decoded = decode_gmon(bytes, &flavor);
  } catch (const FormatError&) {
    return 0;
  }
  Profile profile = profile_from_gmon(decoded, "a.out");
  uint64_t bins = 0;
  for (const GmonHistogram& h : decoded.histograms)
    for (uint16_t b : h.bins) bins += b;
  if (profile.total_count() != bins) std::abort();
  std::string encoded, error;
  if (try_encode_gmon(decoded, flavor, &encoded, &error)) {
    GmonFlavor again_flavor;
    if (decode_gmon(encoded, &again_flavor) != decoded || again_flavor != flavor) std::abort();
  }
  return 0;
}
