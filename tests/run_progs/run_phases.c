// Two phases one after the other (issue 33's timeline): phase_a burns 1 s
// of the thread's CPU time, then phase_b 1 s (PHASE_MS each, default
// 1000). CPU time, not wall time, so that a loaded machine stretches the
// phases without changing the samples each gets.
#include <stdlib.h>
#include <time.h>

static double cpu_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static volatile unsigned long sink;

__attribute__((noinline)) static void burn(double ms) {
  const double end = cpu_ms() + ms;
  while (cpu_ms() < end)
    for (int i = 0; i < 10000; ++i) sink = sink * 31 + (unsigned long)i;
}

// Bodies that differ, so that -O2's identical code folding (-fipa-icf)
// keeps two functions.
__attribute__((noinline)) void phase_a(double ms) {
  burn(ms);
  sink ^= 0xa;
}
__attribute__((noinline)) void phase_b(double ms) {
  burn(ms);
  sink += 0xb;
}

int main(void) {
  const char* env = getenv("PHASE_MS");
  const double ms = env ? atof(env) : 1000;
  phase_a(ms);
  phase_b(ms);
  return 0;
}
