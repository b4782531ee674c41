/* Inlined code in two objects for tests/report_pprof_agrees.sh (issue 35):
 * static inline functions of the program (-O2 -g) and libm's sincos, whose
 * own inlined functions (do_sin, do_cos, reduce_sincos) only libc6-dbg's
 * debug file describes. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static inline double mix(double x) {
  double s, c;
  sincos(x, &s, &c);
  return s * c + x * 1e-9;
}

static inline double poly(double x) {
  double r = 0;
  for (int i = 0; i < 16; ++i) r = r * x + i;
  return r;
}

__attribute__((noinline)) double work(long n) {
  double a = 0;
  for (long i = 0; i < n; ++i) a += mix(i * 0.001) + poly(a * 1e-12);
  return a;
}

int main(int argc, char** argv) {
  printf("%f\n", work(argc > 1 ? atol(argv[1]) : 10000000));
  return 0;
}
