// A thread that blocks in nanosleep through two named functions
// (wait_outer -> wait_inner -> nanosleep) while another burns CPU, for the
// wall clock's blocked stacks (tests/run_wall_stacks.sh). It measures
// itself and prints one line:
//   sleeps N early E sleep_s S sleeper_s L burner_cpu_s C runqueue_s W
// early: sleeps that returned before their full length or with EINTR (a
// signal would have ended them: the wall clock must not send one).
// S is the time the sleeper was blocked: each sleep's length less the time
// its thread then waited for a CPU, woken but not yet running (run_delay,
// /proc/thread-self/schedstat: the kernel reports such a thread as
// running, so no wall clock samples it as blocked; on a loaded 2-core
// machine a 20 ms sleep took up to 43 ms, and the test, which took the
// whole of it for blocked time, failed 8 runs in 10). L is the sleeper's
// life less all it waited for a CPU, W.
// Usage: run_wall_blocked SECONDS
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double seconds;
static int schedstat_fd = -1;  // the sleeper's /proc/thread-self/schedstat
static volatile int stop;
static int sleeps, early;
static double slept, sleeper_life, burner_cpu, runqueue;

static double now(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

// The seconds the calling thread has waited on a run queue (schedstat's
// second field, in ns).
static double run_delay(void) {
  char text[128];
  const ssize_t n = pread(schedstat_fd, text, sizeof text - 1, 0);
  if (n <= 0) return 0;
  text[n] = 0;
  unsigned long long on_cpu = 0, delay = 0;
  if (sscanf(text, "%llu %llu", &on_cpu, &delay) != 2) return 0;
  return delay / 1e9;
}

// Returns whether the sleep ran its whole length.
__attribute__((noinline)) static int wait_inner(long ns) {
  struct timespec ts = {0, ns};
  const double delay = run_delay();
  const double start = now(CLOCK_MONOTONIC);
  const int r = nanosleep(&ts, NULL);
  const double took = now(CLOCK_MONOTONIC) - start;
  slept += took - (run_delay() - delay);
  __asm__ volatile("" ::: "memory");  // no tail call: this frame stays
  return r == 0 && took >= ns / 1e9;
}

__attribute__((noinline)) static int wait_outer(long ns) {
  const int whole = wait_inner(ns);
  __asm__ volatile("" ::: "memory");
  return whole;
}

static void* sleeper(void* unused) {
  (void)unused;
  pthread_setname_np(pthread_self(), "sleeper");
  schedstat_fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
  if (schedstat_fd < 0) {
    perror("/proc/thread-self/schedstat");
    exit(1);
  }
  const double waited = run_delay();
  const double start = now(CLOCK_MONOTONIC);
  while (now(CLOCK_MONOTONIC) - start < seconds) {
    ++sleeps;
    if (!wait_outer(20 * 1000 * 1000)) ++early;
  }
  runqueue = run_delay() - waited;
  sleeper_life = now(CLOCK_MONOTONIC) - start - runqueue;
  stop = 1;
  return NULL;
}

static void* burner(void* unused) {
  (void)unused;
  pthread_setname_np(pthread_self(), "burner");
  volatile unsigned long x = 0;
  while (!stop) x = x * 6364136223846793005ul + 1;
  burner_cpu = now(CLOCK_THREAD_CPUTIME_ID);
  return NULL;
}

int main(int argc, char** argv) {
  seconds = argc > 1 ? atof(argv[1]) : 1.0;
  pthread_t s, b;
  pthread_create(&b, NULL, burner, NULL);
  pthread_create(&s, NULL, sleeper, NULL);
  pthread_join(s, NULL);
  pthread_join(b, NULL);
  printf("sleeps %d early %d sleep_s %.4f sleeper_s %.4f burner_cpu_s %.4f runqueue_s %.4f\n", sleeps, early, slept,
         sleeper_life, burner_cpu, runqueue);
  return 0;
}
