/* A program GNU gprof reads the symbols of, for tests/format_gprof_test.cc:
   three functions big enough that a bin placed inside one never straddles
   another. It is never run. */
#include <stdio.h>

__attribute__((noinline)) long hot_function(long n) {
  volatile long sum = 0;
  for (long i = 0; i < n; ++i) sum += i * i;
  for (long i = 0; i < n; ++i) sum ^= i;
  return sum;
}

__attribute__((noinline)) long cold_function(long n) {
  volatile long sum = 1;
  for (long i = 0; i < n; ++i) sum *= 3;
  for (long i = 0; i < n; ++i) sum -= i;
  return sum;
}

int main(int argc, char** argv) {
  (void)argv;
  printf("%ld\n", hot_function(argc) + cold_function(argc));
  return 0;
}
