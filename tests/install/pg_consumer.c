/* A gcc -pg program linked with libprofil (statically, through pkg-config
 * or the CMake package): work() is called 1234 times and burns about 0.2 s
 * of CPU, so gprof must show both. */
#include <time.h>

static double cpu(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

volatile double sink;
__attribute__((noinline)) void work(void) {
  for (int i = 0; i < 20000; ++i) sink += i * 0.5;
}

int main(void) {
  double start = cpu();
  for (int n = 0; n < 1234; ++n) work();
  while (cpu() - start < 0.2) sink += 1; /* time outside work() too: main */
  return 0;
}
