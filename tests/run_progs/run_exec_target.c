/* Exec'd by run_workload (mode exec): a program of another name, which
 * profil run must profile through the environment it inherits. */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

extern char __start_run_exec_hot[], __stop_run_exec_hot[];

__attribute__((noinline, section("run_exec_hot"))) double exec_work(long n) {
  double x = 5;
  for (long i = 0; i < n; ++i) x += (double)i * 0.375;
  return x;
}

/* Called through a volatile pointer, so the compiler cannot specialize
 * exec_work for the constant argument into a copy outside its section. */
static double (*volatile work)(long) = exec_work;

int main(void) {
  volatile double sink = 0;
  struct timespec ts;
  double start, now;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  start = now = ts.tv_sec + ts.tv_nsec * 1e-9;
  while (now - start < 0.3) {
    sink = sink + work(100000);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    now = ts.tv_sec + ts.tv_nsec * 1e-9;
  }
  printf("range exec_work %d %p %p\n", (int)getpid(), (void*)__start_run_exec_hot, (void*)__stop_run_exec_hot);
  printf("cpu exec_work %d %.6f\n", (int)getpid(), now - start);
  return 0;
}
