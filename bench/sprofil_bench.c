/* sprofil() setup cost against the number of regions (issue 11, case 7):
 * one region per "function", 64 bytes of text each, overlapping every
 * fourth one, all sharing one big bin buffer. Prints the seconds one
 * sprofil() call takes to install them.
 *   sprofil_bench N...            (default 1000 10000 100000 1000000) */
#include <profil/profil.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char** argv) {
  long counts[16] = {1000, 10000, 100000, 1000000};
  int n = 4;
  if (argc > 1) {
    n = 0;
    for (int i = 1; i < argc && n < 16; ++i) counts[n++] = atol(argv[i]);
  }
  for (int k = 0; k < n; ++k) {
    long regions = counts[k];
    struct prof* p = calloc((size_t)regions, sizeof *p);
    unsigned short* bins = calloc((size_t)regions * 32, sizeof *bins);
    if (!p || !bins) return 1;
    for (long i = 0; i < regions; ++i) {
      p[i].pr_base = bins + i * 32;
      p[i].pr_size = 32 * sizeof *bins;
      p[i].pr_off = 0x400000 + (size_t)i * 64 - (i % 4 == 0 ? 32 : 0);
      p[i].pr_scale = 65536;
    }
    double start = now();
    if (sprofil(p, (int)regions, NULL, 0) != 0) {
      perror("sprofil");
      return 1;
    }
    double seconds = now() - start;
    sprofil(NULL, 0, NULL, 0);
    printf("regions=%ld setup_s=%.3f\n", regions, seconds);
    free(p);
    free(bins);
  }
  return 0;
}
