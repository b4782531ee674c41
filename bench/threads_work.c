/* bench/threads.sh's program (issue 32): N threads that burn the CPU for S
 * seconds each, started together; at the end, the CPU time all of them
 * took (getrusage), which a sampler's samples are weighed against:
 *   threads_work N S  ->  "cpu <seconds>" */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static double seconds;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

static void* burn(void* arg) {
  volatile double x = 0;
  const double end = now() + seconds;
  while (now() < end)
    for (int i = 0; i < 10000; i++) x = x * 1.0000001 + 1;
  return arg;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: threads_work THREADS SECONDS\n");
    return 2;
  }
  const int n = atoi(argv[1]);
  seconds = atof(argv[2]);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 64 * 1024); /* 10,000 threads: 640 MiB of address space, not 80 GiB */
  pthread_t* threads = malloc(sizeof(pthread_t) * (size_t)n);
  int started = 0;
  for (; started < n; started++)
    if (pthread_create(&threads[started], &attr, burn, NULL) != 0) break;
  if (started < n) fprintf(stderr, "threads_work: %d of %d threads started\n", started, n);
  for (int i = 0; i < started; i++) pthread_join(threads[i], NULL);
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  printf("cpu %.3f\n", u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + u.ru_stime.tv_sec + u.ru_stime.tv_usec / 1e6);
  return 0;
}
