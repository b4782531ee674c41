/* The CPU-bound program of bench/run_overhead.sh: a fixed amount of work
 * (not a fixed time), spread over a few functions, so the time it takes
 * measures the overhead of being profiled. argv[1]: millions of steps. */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static double mix(double x, long i) { return x * 0.999999 + (double)(i & 7); }

__attribute__((noinline)) static unsigned long hash(unsigned long h, long i) {
  return (h ^ (unsigned long)i) * 0x100000001b3ul;
}

int main(int argc, char** argv) {
  long steps = (argc > 1 ? atol(argv[1]) : 200) * 1000000L;
  double x = 0;
  unsigned long h = 1469598103934665603ul;
  for (long i = 0; i < steps; ++i) {
    x = mix(x, i);
    h = hash(h, i);
  }
  printf("%g %lu\n", x, h);
  return 0;
}
