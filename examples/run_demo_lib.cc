// The demo's shared library: a checksum over a buffer, hot in its own
// object so the report shows time per library.
#include <cstddef>
#include <cstdint>

extern "C" uint64_t demo_checksum(const unsigned char* data, size_t size, int rounds) {
  uint64_t a = 1, b = 0;
  for (int r = 0; r < rounds; ++r)
    for (size_t i = 0; i < size; ++i) {
      a = (a + data[i]) % 65521;
      b = (b + a) % 65521;
    }
  return (b << 16) | a;
}
