/* A program that finds libprofil through pkg-config or CMake, profiles
 * itself and checks that samples arrived. */
#include <profil/profil.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

extern char __executable_start[], etext[];

static double cpu(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(void) {
  size_t n = (size_t)(etext - __executable_start) / 2 + 1;
  unsigned short *bins = calloc(n, sizeof *bins);
  if (profil(bins, n * 2, (size_t)__executable_start, 65536) != 0) return 2;
  volatile double x = 0;
  double start = cpu();
  while (cpu() - start < 0.2)
    for (int i = 0; i < 100000; ++i) x += i;
  unsigned short *volatile off = NULL;
  profil(off, 0, 0, 0);
  unsigned long total = 0;
  for (size_t i = 0; i < n; ++i) total += bins[i];
  printf("samples %lu at %u Hz\n", total, profil_sampling_hz());
  return total >= 10 ? 0 : 1;  /* 0.2 s at 100 Hz: about 20 */
}
