// libFuzzer target for decode_pprof (gzip'd or plain profile.proto): any
// bytes either decode or raise FormatError. What decodes must come back
// unchanged through encode_pprof (unless a count is too large for it).
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "format/pprof.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace profiling::format;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  Profile decoded;
  try {
    decoded = decode_pprof(bytes);
  } catch (const FormatError&) {
    return 0;
  }
  std::string encoded;
  try {
    encoded = encode_pprof(decoded);
  } catch (const FormatError&) {
    return 0;  // e.g. count * period beyond int64
  }
  if (decode_pprof(encoded) != decoded) std::abort();
  return 0;
}
