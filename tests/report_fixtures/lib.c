/* The shared library of the report tests' fixture program. */
__attribute__((noinline)) int fixture_library_work(int n) {
  int total = 0;
  for (int i = 0; i < n; ++i) total += i * i;
  return total;
}
