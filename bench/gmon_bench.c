/* The program bench/gmon.sh runs: THREADS threads each call leaf() CALLS
 * times and the run prints the CPU time a call took, in nanoseconds
 * (CLOCK_PROCESS_CPUTIME_ID over the loops, divided by the calls made).
 * Built three ways (bench/gmon.cmake): without -pg (the cost of the call
 * itself), -pg with glibc's gmon, -pg linked with libprofil.
 *   gmon_bench CALLS THREADS */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

__attribute__((noipa)) void leaf(long *counter) { ++*counter; }

static long calls_per_thread;
static void *loop(void *arg) {
  long *counter = arg;
  for (long i = 0; i < calls_per_thread; ++i) leaf(counter);
  return NULL;
}

static double process_cpu(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  calls_per_thread = argc > 1 ? atol(argv[1]) : 20000000;
  int threads = argc > 2 ? atoi(argv[2]) : 1;
  if (calls_per_thread <= 0 || threads < 1 || threads > 64) {
    fprintf(stderr, "usage: gmon_bench CALLS THREADS\n");
    return 2;
  }
  pthread_t ids[64];
  long counters[64 * 8] = {0}; /* one cache line each */
  double start = process_cpu();
  for (int t = 0; t < threads; ++t) pthread_create(&ids[t], NULL, loop, &counters[t * 8]);
  for (int t = 0; t < threads; ++t) pthread_join(ids[t], NULL);
  double seconds = process_cpu() - start;
  printf("%.3f\n", seconds * 1e9 / ((double)calls_per_thread * threads));
  return 0;
}
