/* Exec'd from a profiled process: burns CPU for argv[1] seconds of its own
 * CPU time and exits 0. If the profiling timer survived the exec (glibc's
 * ITIMER_PROF does), SIGPROF's default action kills it first. */
#include <stdlib.h>
#include <time.h>

static double cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  double budget = argc > 1 ? atof(argv[1]) : 0.3;
  volatile double x = 0;
  double start = cpu_seconds();
  while (cpu_seconds() - start < budget)
    for (int i = 0; i < 10000; ++i) x += i * 0.5;
  return 0;
}
