/* Inlined code for the symbolizer's inline frames (issue 13): square() is
 * inlined into middle(), itself inlined into outer(); outer() is not
 * inlined. Built -O2 -g: DWARF describes each inlined call. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

volatile unsigned long sink;

static inline __attribute__((always_inline)) unsigned long square(unsigned long x) {
  sink += x;
  return x * x + sink; /* SQUARE_BODY */
}

static inline __attribute__((always_inline)) unsigned long middle(unsigned long x) {
  unsigned long y = square(x + 1); /* MIDDLE_CALLS_SQUARE */
  sink ^= y;
  return y;
}

__attribute__((noinline)) unsigned long outer(unsigned long n) {
  unsigned long total = 0;
  for (unsigned long i = 0; i < n; ++i) total += middle(i); /* OUTER_CALLS_MIDDLE */
  return total;
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "addresses") == 0) {
    printf("sym outer %p\n", (void*)outer);
    FILE* maps = fopen("/proc/self/maps", "r");
    char line[4096];
    while (maps && fgets(line, sizeof line, maps)) printf("map %s", line);
    if (maps) fclose(maps);
    return 0;
  }
  printf("%lu\n", outer(argc > 1 ? strtoul(argv[1], NULL, 10) : 10));
  return 0;
}
