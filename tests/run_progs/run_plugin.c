/* Loaded with dlopen by run_workload (mode dlopen): an object that is not
 * in the program's link map at start, only in /proc/self/maps at the end. */
extern char __start_run_plugin_hot[], __stop_run_plugin_hot[];

__attribute__((noinline, section("run_plugin_hot"))) double plugin_work(long n) {
  double x = 4;
  for (long i = 0; i < n; ++i) x += (double)i * 0.0625;
  return x;
}

void plugin_work_range(void** low, void** high) {
  *low = __start_run_plugin_hot;
  *high = __stop_run_plugin_hot;
}
