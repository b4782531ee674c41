/* A program whose functions the report tests look up: built as a PIE, a
 * non-PIE, and stripped copies. "addresses" prints where its functions are
 * and its executable mappings, so a test can symbolize real runtime
 * addresses the way a profile records them. "burn N M" spends CPU time in
 * hot_inner (N thousand calls) and hot_outer's own loop (M thousand). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int fixture_library_work(int n);

/* A function without a .size directive (hand-written assembly does this):
 * the symbolizer must extend it to the next symbol. */
__asm__(".text\n"
        ".p2align 4\n"
        ".globl zero_size_first\n"
        ".type zero_size_first, @function\n"
        "zero_size_first:\n"
        "  nop\n  nop\n  nop\n  nop\n  nop\n  nop\n  nop\n"
        "  ret\n"
        ".globl zero_size_second\n"
        ".type zero_size_second, @function\n"
        "zero_size_second:\n"
        "  ret\n"
        ".p2align 4\n");
void zero_size_first(void);
void zero_size_second(void);

volatile unsigned long sink;

__attribute__((noinline)) unsigned long hot_inner(unsigned long x) {
  for (int i = 0; i < 64; ++i) x = x * 6364136223846793005ul + 1442695040888963407ul;
  return x;
}

__attribute__((noinline)) unsigned long hot_outer(unsigned long rounds, unsigned long extra) {
  unsigned long x = 1;
  for (unsigned long i = 0; i < rounds; ++i) {
    x ^= hot_inner(x);
    x += i * 3;
  }
  /* Work of hot_outer's own, for "made slower" profiles. */
  for (unsigned long i = 0; i < extra; ++i) x = (x >> 3) + i * 2654435761ul;
  return x;
}

static __attribute__((noinline)) int local_helper(int v) { return v * 7 + (int)sink; }

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "addresses") == 0) {
    printf("sym hot_inner %p\n", (void*)hot_inner);
    printf("sym hot_outer %p\n", (void*)hot_outer);
    printf("sym local_helper %p\n", (void*)local_helper);
    printf("sym main %p\n", (void*)main);
    printf("sym zero_size_first %p\n", (void*)zero_size_first);
    printf("sym zero_size_second %p\n", (void*)zero_size_second);
    printf("sym fixture_library_work %p\n", (void*)fixture_library_work);
    FILE* maps = fopen("/proc/self/maps", "r");
    char line[4096];
    while (maps && fgets(line, sizeof line, maps)) printf("map %s", line);
    if (maps) fclose(maps);
    return 0;
  }
  /* burn ROUNDS [EXTRA]: thousands of hot_inner calls, thousands of
   * iterations of hot_outer's own loop. */
  unsigned long rounds = argc > 2 ? strtoul(argv[2], NULL, 10) * 1000ul : 1000;
  unsigned long extra = argc > 3 ? strtoul(argv[3], NULL, 10) * 1000ul : 0;
  sink = hot_outer(rounds, extra) + (unsigned long)local_helper(fixture_library_work(3));
  return 0;
}
