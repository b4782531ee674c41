/* A program built with gcc -pg and linked with libprofil: known call counts
 * (called_2000 from main, per_thread 3000 times from each of two threads),
 * a hot function, and with "fork" a child doing its own work. */
#include <pthread.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double thread_cpu(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}
volatile int side_effect;
__attribute__((noinline)) double leaf(int n) {
  double x = 0;
  for (int i = 0; i < n; ++i) x += i * 0.5;
  return x;
}
__attribute__((noinline)) double called_2000(void) { side_effect++; return leaf(10); }
__attribute__((noinline)) double per_thread(void) { side_effect++; return leaf(10); }
__attribute__((noinline)) double hot(void) { return leaf(1000000); }
__attribute__((noinline)) double child_work(void) { return leaf(1000000); }

static void *worker(void *arg) {
  (void)arg;
  volatile double s = 0;
  for (int i = 0; i < 3000; ++i) s += per_thread();
  return NULL;
}

int main(int argc, char **argv) {
  volatile double s = 0;
  for (int i = 0; i < 2000; ++i) s += called_2000();
  pthread_t a, b;
  pthread_create(&a, NULL, worker, NULL);
  pthread_create(&b, NULL, worker, NULL);
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  double t = thread_cpu();
  while (thread_cpu() - t < 0.4) s += hot();
  if (argc > 1 && strcmp(argv[1], "fork") == 0) {
    pid_t child = fork();
    if (child == 0) {
      double t2 = thread_cpu();
      while (thread_cpu() - t2 < 0.3) s += child_work();
      return 0;
    }
    waitpid(child, NULL, 0);
  }
  return 0;
}
