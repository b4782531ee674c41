/* The workload of tests/run_threads_test.cc (issue 22: threads and
 * processes in every view). Modes:
 *   threads A B   two threads burn A and B seconds of their own CPU time;
 *                 each names itself first (pthread_setname_np: "burn-a",
 *                 "burn-b") and prints "thread NAME TID CPU" when done;
 *                 the main thread waits in pthread_join
 *   fork A B      the process burns A seconds and a forked child B; each
 *                 prints "process PID CPU"
 * CPU time is each thread's own clock, so shares are exact up to sampling. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: run_threads threads|fork A B\n");
    return 2;
  }
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
