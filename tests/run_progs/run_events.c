/* Events' target (issue 33, tests/run_events.sh): "faults" touches fresh
 * pages in touch_pages (each its first write: a page fault) and computes
 * in compute (no fault); "faults-forever" does the same for up to 300 s
 * (until killed: profil attach's target); "switches" sleeps in sleeper (nanosleep in a
 * loop: a context switch each) and computes in compute. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

volatile uint64_t sink;

__attribute__((noinline)) void touch_pages(size_t pages, int rounds) {
  for (int r = 0; r < rounds; ++r) {
    char* p = mmap(NULL, pages * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return;
    madvise(p, pages * 4096, MADV_NOHUGEPAGE); /* a fault per 4 KiB page, not per 2 MiB */
    for (size_t i = 0; i < pages; ++i) p[i * 4096] = (char)i;
    munmap(p, pages * 4096);
  }
}

__attribute__((noinline)) void compute(uint64_t n) {
  uint64_t x = 1;
  for (uint64_t i = 0; i < n; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
  sink = x;
}

__attribute__((noinline)) void sleeper(int times) {
  const struct timespec t = {0, 50000};
  for (int i = 0; i < times; ++i) nanosleep(&t, NULL);
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "faults";
  if (strcmp(mode, "faults") == 0) {
    touch_pages(4096, 5);
    compute(50000000);
  } else if (strcmp(mode, "faults-forever") == 0) {
    const time_t until = time(NULL) + 300;
    while (time(NULL) < until) {
      touch_pages(256, 1);
      compute(100000);
    }
  } else {
    sleeper(2000);
    compute(20000000);
  }
  return 0;
}
