/* A known call tree for the whole-stack tests (tests/unwind_capture_test.cc),
 * built -O2 -fomit-frame-pointer (tests/unwind.cmake; the test checks the
 * prologues): cg_a -> cg_leaf one unit of work, cg_b -> cg_leaf two units,
 * a qsort through the C library calling cg_compare back, a signal handler
 * (cg_on_signal) run by raise() from cg_signal_path, and a function of a
 * dlopen'ed plugin called from cg_call_plugin. Every call is followed by a
 * store so that no call becomes a tail call and every caller stays on the
 * stack. */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>

volatile uint64_t cg_sink;

/* One unit: about a millisecond of multiply-adds that no compiler folds. */
#define CG_UNIT 1000000L

__attribute__((noinline)) void cg_leaf(long units) {
  uint64_t x = cg_sink;
  for (long i = 0; i < units * CG_UNIT; ++i) x = x * 6364136223846793005ull + (uint64_t)i;
  cg_sink = x;
}

__attribute__((noinline)) void cg_a(void) {
  cg_leaf(1);
  cg_sink++;
}

__attribute__((noinline)) void cg_b(void) {
  cg_leaf(2);
  cg_sink++;
}

__attribute__((noinline)) int cg_compare(const void* left, const void* right) {
  uint64_t x = cg_sink;
  for (int i = 0; i < 60; ++i) x = x * 6364136223846793005ull + (uint64_t)i;
  cg_sink = x;
  const int a = *(const int*)left, b = *(const int*)right;
  return (a > b) - (a < b);
}

__attribute__((noinline)) void cg_sort(void) {
  static int values[4096];
  uint32_t seed = (uint32_t)cg_sink | 1u;
  for (int i = 0; i < 4096; ++i) {
    seed = seed * 1103515245u + 12345u;
    values[i] = (int)(seed >> 8);
  }
  qsort(values, 4096, sizeof values[0], cg_compare);
  cg_sink++;
}

__attribute__((noinline)) void cg_handler_work(void) {
  uint64_t x = cg_sink;
  for (long i = 0; i < CG_UNIT; ++i) x = x * 6364136223846793005ull + (uint64_t)i;
  cg_sink = x;
}

void cg_on_signal(int signo) {
  (void)signo;
  cg_handler_work();
  cg_sink++;
}

__attribute__((noinline)) void cg_signal_path(void) {
  raise(SIGUSR1);
  cg_sink++;
}

__attribute__((noinline)) void cg_call_plugin(void (*work)(long)) {
  work(1);
  cg_sink++;
}

__attribute__((noinline)) void cg_round(void (*plugin_work)(long)) {
  cg_a();
  cg_b();
  cg_sort();
  cg_signal_path();
  if (plugin_work != 0) cg_call_plugin(plugin_work);
  cg_sink++;
}
