/* bench/attached_hours.sh's server (issue 32): threads and processes that
 * start and end all the time, for SECONDS: rounds of up to 16 short worker
 * threads, and every tenth round a child process that runs a few workers of
 * its own and exits (a pre-fork server's recycled workers).
 *   churn_server SECONDS */
#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

static void* work(void* arg) {
  volatile double x = 0;
  for (int i = 0; i < 200000; i++) x = x * 1.0000001 + 1;
  return arg;
}

static void round_of_threads(int n) {
  pthread_t t[16];
  for (int i = 0; i < n; i++) pthread_create(&t[i], NULL, work, NULL);
  for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
}

int main(int argc, char** argv) {
  const double end = now() + (argc > 1 ? atof(argv[1]) : 60);
  for (unsigned r = 0; now() < end; r++) {
    round_of_threads(1 + (int)(r % 16));
    if (r % 10 == 0) {
      const pid_t child = fork();
      if (child == 0) {
        round_of_threads(4);
        _exit(0);
      }
      if (child > 0) waitpid(child, NULL, 0);
    }
    usleep(20000);
  }
  return 0;
}
