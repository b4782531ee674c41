/* The workload of tests/run_threads_test.cc (issue 22: threads and
 * processes in every view). Modes:
 *   threads A B   two threads burn A and B seconds of their own CPU time;
 *                 each names itself first (pthread_setname_np: "burn-a",
 *                 "burn-b") and prints "thread NAME TID CPU" when done;
 *                 the main thread waits in pthread_join
 *   fork A B      the process burns A seconds and a forked child B; each
 *                 prints "process PID CPU"
 *   many N S      N threads burn S seconds each, started together (issue
 *                 32: a server's pool); at the end "threads_cpu T" (the sum
 *                 of each thread's own CPU time at its end, main's too) and
 *                 "process_cpu P" (getrusage: what the threads' clocks
 *                 missed of their creation and exit included)
 * CPU time is each thread's own clock, so shares are exact up to sampling. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double thread_cpu(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

__attribute__((noinline)) double burn(double seconds) {
  volatile double x = 0;
  const double until = thread_cpu() + seconds;
  while (thread_cpu() < until)
    for (int i = 0; i < 20000; ++i) x += i * 0.5;
  return x;
}

struct Work {
  const char* name;
  double seconds;
};

static void* worker(void* arg) {
  const struct Work* work = arg;
  pthread_setname_np(pthread_self(), work->name);
  burn(work->seconds);
  printf("thread %s %ld %.6f\n", work->name, (long)syscall(SYS_gettid), thread_cpu());
  fflush(stdout);
  return NULL;
}

static pthread_mutex_t many_lock = PTHREAD_MUTEX_INITIALIZER;
static double many_cpu;

static void* many_worker(void* arg) {
  burn(*(const double*)arg);
  const double cpu = thread_cpu();
  pthread_mutex_lock(&many_lock);
  many_cpu += cpu;
  pthread_mutex_unlock(&many_lock);
  return NULL;
}

static int many(int n, double seconds) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 64 * 1024);
  pthread_t* threads = calloc((size_t)n, sizeof *threads);
  int started = 0;
  while (started < n && pthread_create(&threads[started], &attr, many_worker, &seconds) == 0) ++started;
  for (int i = 0; i < started; ++i) pthread_join(threads[i], NULL);
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  printf("threads %d\nthreads_cpu %.6f\nprocess_cpu %.6f\n", started, many_cpu + thread_cpu(),
         u.ru_utime.tv_sec + u.ru_utime.tv_usec * 1e-6 + u.ru_stime.tv_sec + u.ru_stime.tv_usec * 1e-6);
  free(threads);
  return started == n ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: run_threads threads|fork A B, run_threads many N S\n");
    return 2;
  }
  if (strcmp(argv[1], "many") == 0) return many(atoi(argv[2]), atof(argv[3]));
  const double a = atof(argv[2]), b = atof(argv[3]);
  if (strcmp(argv[1], "threads") == 0) {
    struct Work works[2] = {{"burn-a", a}, {"burn-b", b}};
    pthread_t threads[2];
    for (int i = 0; i < 2; ++i) pthread_create(&threads[i], NULL, worker, &works[i]);
    for (int i = 0; i < 2; ++i) pthread_join(threads[i], NULL);
    return 0;
  }
  if (strcmp(argv[1], "fork") == 0) {
    fflush(stdout);
    const pid_t child = fork();
    burn(child == 0 ? b : a);
    printf("process %ld %.6f\n", (long)getpid(), thread_cpu());
    fflush(stdout);
    if (child == 0) _exit(0);
    waitpid(child, NULL, 0);
    return 0;
  }
  return 2;
}
