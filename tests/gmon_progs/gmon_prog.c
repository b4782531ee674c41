/* A program built with gcc -pg and linked with libprofil (or, for the
 * comparison, with glibc's gmon alone). What it does is known exactly:
 *   called_2000   2000 calls from main
 *   hot_loop      ~0.4 s of CPU time (measured, printed as hot_cpu=)
 * and, by argument:
 *   threads  two threads at once, each calling per_thread 100000 times and
 *            spending ~0.2 s of its own CPU time in thread_hot;
 *   fork     a child spending ~0.3 s in child_work (child_cpu=), called
 *            child_calls= times; the parent waits for it;
 *   chdir    chdir("/") before exit: the file still lands where it started;
 *   twice    monstartup() again (harmless) and _mcleanup() before returning
 *            (so exit's _mcleanup is the second call);
 *   signals  a -pg SIGVTALRM handler (a CPU-time interval timer) calls
 *            in_handler while main calls called_2000 a million times or more
 *            (until the handler has run 3 times), so
 *            mcount is interrupted by mcount; prints handler_calls=;
 *   _exit    hot_loop, then _exit(7): no atexit, the file is written all the same;
 *   abort    hot_loop, then abort(): the file, then death by SIGABRT;
 *   segv     hot_loop, then a write through a null pointer: the file, then SIGSEGV;
 *   args     mcount keeps the argument registers: float, integer and
 *            varargs arguments arrive intact (exit 2 otherwise);
 *   many     fn_00..fn_77 (octal digits: fn_<i/8><i%8>) called i + 1 times
 *            from one call site each: 64 distinct arcs.
 * Work is bounded by CPU time (CLOCK_THREAD_CPUTIME_ID), never wall time. */
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/gmon.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double thread_cpu(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

volatile double sink;
__attribute__((noinline)) void called_2000(void) { sink += 1; }
__attribute__((noinline)) void per_thread(void) { sink += 1; }
/* Spins for about a millisecond. */
__attribute__((noinline)) void spin(volatile double *x) {
  for (int i = 0; i < 300000; ++i) *x += i * 0.5;
}
__attribute__((noinline)) double hot_loop(double seconds) {
  volatile double x = 0;
  double start = thread_cpu();
  while (thread_cpu() - start < seconds)
    for (int i = 0; i < 300000; ++i) x += i * 0.5;
  return thread_cpu() - start;
}
__attribute__((noinline)) double thread_hot(double seconds) { return hot_loop(seconds); }
__attribute__((noinline)) void child_work(void) {
  volatile double x = 0;
  spin(&x);
}

#define FN(i) \
  __attribute__((noinline)) void fn_##i(void) { sink += i; }
#define FN8(a) FN(a##0) FN(a##1) FN(a##2) FN(a##3) FN(a##4) FN(a##5) FN(a##6) FN(a##7)
FN8(0) FN8(1) FN8(2) FN8(3) FN8(4) FN8(5) FN8(6) FN8(7)
/* A volatile bound: one call site per function (no unrolled copies). */
volatile int zero;
#define CALL(i, n) for (int k = 0; k < (n) + zero; ++k) fn_##i();
#define CALL8(a, base) \
  CALL(a##0, base + 1) CALL(a##1, base + 2) CALL(a##2, base + 3) CALL(a##3, base + 4) \
  CALL(a##4, base + 5) CALL(a##5, base + 6) CALL(a##6, base + 7) CALL(a##7, base + 8)

volatile sig_atomic_t handler_calls;
__attribute__((noinline)) void in_handler(void) { ++handler_calls; }
static void on_vtalrm(int signo) {
  (void)signo;
  in_handler();
}

__attribute__((noipa)) double mix(double a, int b, float c, long d, double e, int f, double g, double h,
                                  double i, double j, double k, double l) {
  return a + b + c + d + e + f + g + h + i + j + k + l;
}
__attribute__((noipa)) long sum_varargs(int n, ...) {
  va_list ap;
  va_start(ap, n);
  long total = 0;
  for (int i = 0; i < n; ++i) total += i % 2 ? (long)va_arg(ap, double) : va_arg(ap, long);
  va_end(ap);
  return total;
}

static double thread_seconds[2];
static void *worker(void *arg) {
  int index = *(int *)arg;
  for (int i = 0; i < 100000; ++i) per_thread();
  thread_seconds[index] = thread_hot(0.2);
  for (int i = 0; i < 100000; ++i) per_thread();
  return NULL;
}

extern char __executable_start, etext;

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  for (int i = 0; i < 2000; ++i) called_2000();
  if (strcmp(mode, "many") == 0) {
    CALL8(0, 0) CALL8(1, 8) CALL8(2, 16) CALL8(3, 24) CALL8(4, 32) CALL8(5, 40) CALL8(6, 48) CALL8(7, 56)
    return 0;
  }
  if (strcmp(mode, "args") == 0) {
    for (int n = 0; n < 1000; ++n) {
      if (mix(0.5, 1, 0.25f, 2, 0.125, 3, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5) != 30.875) return 2;
      if (sum_varargs(6, 1L, 2.0, 3L, 4.0, 5L, 6.0) != 21) return 2;
    }
    return 0;
  }
  if (strcmp(mode, "signals") == 0) {
    signal(SIGVTALRM, on_vtalrm);
    struct itimerval every_ms = {{0, 1000}, {0, 1000}};
    setitimer(ITIMER_VIRTUAL, &every_ms, NULL);
    /* Until the timer has fired a few times, however long that takes: the
     * loop's CPU time alone is ~3 ms, less than one 4 ms kernel tick, so a
     * fixed count of calls could end before the first signal. */
    long loop_calls = 0;
    do {
      called_2000();
      ++loop_calls;
    } while (loop_calls < 1000000 || handler_calls < 3);
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_VIRTUAL, &off, NULL);
    printf("handler_calls=%d\nloop_calls=%ld\n", (int)handler_calls, loop_calls);
    return 0;
  }
  if (strcmp(mode, "threads") == 0) {
    pthread_t threads[2];
    int index[2] = {0, 1};
    for (int t = 0; t < 2; ++t) pthread_create(&threads[t], NULL, worker, &index[t]);
    for (int t = 0; t < 2; ++t) pthread_join(threads[t], NULL);
    printf("thread_cpu=%.4f\n", thread_seconds[0] + thread_seconds[1]);
  }
  printf("hot_cpu=%.4f\n", hot_loop(0.4));
  fflush(stdout);
  if (strcmp(mode, "fork") == 0) {
    pid_t child = fork();
    if (child == 0) {
      double start = thread_cpu();
      int calls = 0;
      while (thread_cpu() - start < 0.3) {
        child_work();
        ++calls;
      }
      printf("child_cpu=%.4f\nchild_calls=%d\nchild_pid=%d\n", thread_cpu() - start, calls, (int)getpid());
      return 0;
    }
    waitpid(child, NULL, 0);
  }
  if (strcmp(mode, "_exit") == 0) _exit(7);
  if (strcmp(mode, "abort") == 0) abort();
  if (strcmp(mode, "segv") == 0) {
    volatile int *volatile nowhere = NULL;
    *nowhere = 1;
  }
  if (strcmp(mode, "chdir") == 0 && chdir("/") != 0) return 1;
  if (strcmp(mode, "twice") == 0) {
    monstartup((unsigned long)&__executable_start, (unsigned long)&etext);
    _mcleanup();
    for (int i = 0; i < 500; ++i) called_2000(); /* after _mcleanup: not in the file */
  }
  return 0;
}
