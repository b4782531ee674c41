/* A shared library of the test program's own: CPU time spent here must be
 * attributed to this object's mapping. */
#include <time.h>

extern char __start_run_lib_hot[], __stop_run_lib_hot[];

__attribute__((noinline, section("run_lib_hot"))) double lib_work(long n) {
  double x = 3;
  for (long i = 0; i < n; ++i) x += (double)i * 0.125;
  return x;
}

void lib_work_range(void** low, void** high) {
  *low = __start_run_lib_hot;
  *high = __stop_run_lib_hot;
}
