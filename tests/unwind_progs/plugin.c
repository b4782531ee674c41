/* Code loaded by dlopen after the unwind tables were built
 * (tests/unwind_capture_test.cc): its samples unwind only if the dlopen
 * interposer rebuilt them. -O2 -fomit-frame-pointer, like callgraph.c. */
#include <stdint.h>

volatile uint64_t plugin_sink;

__attribute__((visibility("default"), noinline)) void plugin_work(long units) {
  uint64_t x = plugin_sink;
  for (long i = 0; i < units * 1000000L; ++i) x = x * 6364136223846793005ull + (uint64_t)i;
  plugin_sink = x;
}
