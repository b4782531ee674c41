/* Sampler benchmark: samples delivered per CPU-second, CPU time accounted,
 * and slowdown, for whatever profil() this process resolves to: glibc's when
 * run plainly, libprofil's when run with LD_PRELOAD=libprofil.so (clock and
 * rate from PROFIL_CLOCK / PROFIL_HZ). One line of key=value per run.
 *
 * usage: sampler_bench SECONDS [THREADS] [claimed_hz]
 * claimed_hz is the rate the counts are read at (glibc: 100, gprof's
 * assumption; libprofil: the rate it reports). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

extern char __executable_start[], etext[];

typedef struct { uint64_t signals, ticks, dropped, buffer_faults; } stats_t;

static double clock_seconds(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

__attribute__((noinline)) static double work(long n) {
  double x = 0;
  for (long i = 0; i < n; ++i) x += (double)i * 0.5;
  return x;
}

struct job { double seconds, cpu; uint64_t iterations; };

static void *run(void *p) {
  struct job *j = p;
  volatile double sink = 0;
  double start = clock_seconds(CLOCK_THREAD_CPUTIME_ID), now;
  while ((now = clock_seconds(CLOCK_THREAD_CPUTIME_ID)) - start < j->seconds) {
    sink += work(200000);
    j->iterations++;
  }
  j->cpu = now - start;
  return NULL;
}

int main(int argc, char **argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 1.0;
  int threads = argc > 2 ? atoi(argv[2]) : 1;
  double claimed_hz = argc > 3 ? atof(argv[3]) : 0;
  int profile = getenv("BENCH_NO_PROFIL") == NULL;
  size_t nbins = (size_t)(etext - __executable_start) / 2 + 1;
  unsigned short *bins = calloc(nbins, 2);
  unsigned (*sampling_hz)(void) = (unsigned (*)(void))dlsym(RTLD_DEFAULT, "profil_sampling_hz");
  void (*get_stats)(stats_t *) = (void (*)(stats_t *))dlsym(RTLD_DEFAULT, "profil_get_stats");
  if (profile && profil(bins, nbins * 2, (size_t)__executable_start, 65536) != 0) {
    perror("profil");
    return 1;
  }
  if (claimed_hz == 0) claimed_hz = sampling_hz ? sampling_hz() : 100;
  struct job jobs[16] = {{0}};
  pthread_t ids[16];
  if (threads > 16) threads = 16;
  for (int i = 0; i < threads; ++i) {
    jobs[i].seconds = seconds;
    pthread_create(&ids[i], NULL, run, &jobs[i]);
  }
  double cpu = 0;
  uint64_t iterations = 0;
  for (int i = 0; i < threads; ++i) {
    pthread_join(ids[i], NULL);
    cpu += jobs[i].cpu;
    iterations += jobs[i].iterations;
  }
  unsigned short *volatile off = NULL; /* <unistd.h> says nonnull; the pages say NULL is off */
  if (profile) profil(off, 0, 0, 0);
  uint64_t counts = 0;
  for (size_t i = 0; i < nbins; ++i) counts += bins[i];
  stats_t st = {0};
  if (get_stats) get_stats(&st);
  printf("impl=%s threads=%d cpu=%.3f counts=%llu counts_per_cpu_s=%.1f signals_per_cpu_s=%.1f "
         "accounted_cpu=%.3f accounted_error_pct=%.2f iterations_per_cpu_s=%.1f\n",
         get_stats ? "libprofil" : "glibc", threads, cpu, (unsigned long long)counts, counts / cpu,
         get_stats ? st.signals / cpu : -1.0, counts / claimed_hz, 100.0 * (counts / claimed_hz - cpu) / cpu,
         iterations / cpu);
  return 0;
}
