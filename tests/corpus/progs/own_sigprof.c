// A program that profiles itself the traditional way: its own SIGPROF
// handler and setitimer(ITIMER_PROF) at 100 Hz, as gprof's runtime and many
// hand-rolled profilers do. It burns CPU, then prints its result (stdout:
// the same every run) and, on stderr, how many signals its handler got per
// CPU-second ("own SIGPROF rate: R Hz") — about its 100 Hz with or without
// profil run.
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static volatile sig_atomic_t signals;

static void on_sigprof(int sig) {
  (void)sig;
  signals = signals + 1;
}

static double cpu_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(void) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = on_sigprof;
  action.sa_flags = SA_RESTART;
  sigaction(SIGPROF, &action, NULL);
  struct itimerval timer = {{0, 10000}, {0, 10000}};  // 100 Hz of CPU time
  setitimer(ITIMER_PROF, &timer, NULL);
  double start = cpu_seconds();
  volatile unsigned long x = 1;
  unsigned long sum = 0;
  for (unsigned long i = 0; i < 1100000000UL; ++i) {
    x = x * 6364136223846793005UL + 1442695040888963407UL;
    sum += x >> 60;
  }
  double used = cpu_seconds() - start;
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_PROF, &off, NULL);
  printf("sum %lu\n", sum);
  fprintf(stderr, "own SIGPROF rate: %.1f Hz (%d signals in %.3f CPU-seconds)\n", signals / used, (int)signals, used);
  return 0;
}
