/* A program that profiles itself through the profil(2) API and prints its
 * hottest functions: the facility as the manual pages describe it, with a
 * symbol lookup (dladdr; the program is linked -rdynamic) on top. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <profil/profil.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

extern char __executable_start[], etext[];

static double thread_cpu(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

__attribute__((noinline)) double mandelbrot_row(int y) {
  double sum = 0;
  for (int x = 0; x < 400; ++x) {
    double cr = x / 200.0 - 1.5, ci = y / 200.0 - 1.0, zr = 0, zi = 0;
    int i = 0;
    while (i < 200 && zr * zr + zi * zi < 4) {
      double t = zr * zr - zi * zi + cr;
      zi = 2 * zr * zi + ci;
      zr = t;
      ++i;
    }
    sum += i;
  }
  return sum;
}

__attribute__((noinline)) double sum_of_squares(long n) {
  double s = 0;
  for (long i = 0; i < n; ++i) s += (double)i * (double)i;
  return s;
}

__attribute__((noinline)) unsigned long collatz_steps(unsigned long limit) {
  unsigned long total = 0;
  for (unsigned long n = 1; n < limit; ++n)
    for (unsigned long k = n; k != 1; k = (k & 1) ? 3 * k + 1 : k / 2) ++total;
  return total;
}

static void *worker(void *arg) {
  (void)arg;
  volatile double sink = 0;
  double start = thread_cpu();
  while (thread_cpu() - start < 0.4) sink += sum_of_squares(200000);
  return NULL;
}

struct row { const char *name; unsigned long count; };

static int by_count(const void *a, const void *b) {
  const struct row *x = a, *y = b;
  return (x->count < y->count) - (x->count > y->count);
}

int main(void) {
  const size_t nbins = (size_t)(etext - __executable_start) / 2 + 1;
  unsigned short *bins = calloc(nbins, sizeof *bins);
  if (profil_set_clock(PROFIL_CLOCK_CPU, 1000) != 0 ||
      profil(bins, nbins * sizeof *bins, (size_t)__executable_start, 65536) != 0) {
    perror("profil");
    return 1;
  }
  pthread_t thread;
  pthread_create(&thread, NULL, worker, NULL);
  volatile double sink = 0;
  double start = thread_cpu();
  int y = 0;
  while (thread_cpu() - start < 0.8) {
    sink += mandelbrot_row(y++ % 400);
    if (y % 8 == 0) sink += (double)collatz_steps(3000);
  }
  pthread_join(thread, NULL);
  unsigned short *volatile off = NULL;
  profil(off, 0, 0, 0);

  struct row rows[64];
  size_t nrows = 0;
  unsigned long total = 0;
  for (size_t i = 0; i < nbins; ++i) {
    if (bins[i] == 0) continue;
    total += bins[i];
    Dl_info info;
    const char *name = "[unknown]";
    if (dladdr(__executable_start + 2 * i, &info) && info.dli_sname) name = info.dli_sname;
    size_t r = 0;
    while (r < nrows && strcmp(rows[r].name, name) != 0) ++r;
    if (r == nrows && nrows < 64) rows[nrows++] = (struct row){name, 0};
    if (r < nrows) rows[r].count += bins[i];
  }
  qsort(rows, nrows, sizeof rows[0], by_count);
  printf("profil(2) self-profile: %lu samples at %u Hz (%.2f s of CPU in two threads)\n", total,
         profil_sampling_hz(), total / (double)profil_sampling_hz());
  printf("%8s %7s  %s\n", "samples", "percent", "function");
  for (size_t r = 0; r < nrows && r < 10; ++r)
    printf("%8lu %6.1f%%  %s\n", rows[r].count, 100.0 * rows[r].count / total, rows[r].name);
  return 0;
}
