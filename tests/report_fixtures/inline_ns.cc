// Inline frames inside C++ namespaces, built by g++ and by clang++ (issue
// 23): GCC puts a namespace's function definitions at the unit's top level,
// clang inside the namespace's DIE, and the symbolizer looks into
// namespaces only when the top level has no function at the address.
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace fixture {
namespace inner {

volatile unsigned long sink;

inline __attribute__((always_inline)) unsigned long square(unsigned long x) {
  sink = sink + x;
  return x * x + sink;  // NS_SQUARE_BODY
}

__attribute__((noinline)) unsigned long work(unsigned long n) {
  unsigned long total = 0;
  for (unsigned long i = 0; i < n; ++i) total += square(i) ^ (total >> 3);
  return total;
}

}  // namespace inner
}  // namespace fixture

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "addresses") == 0) {
    std::printf("sym work %p\n", reinterpret_cast<void*>(&fixture::inner::work));
    FILE* maps = std::fopen("/proc/self/maps", "r");
    char line[4096];
    while (maps && std::fgets(line, sizeof line, maps)) std::printf("map %s", line);
    if (maps) std::fclose(maps);
    return 0;
  }
  std::printf("%lu\n", fixture::inner::work(argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 10));
  return 0;
}
