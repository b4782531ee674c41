/* The C API in a static program (linked with libprofil.a): profil(),
 * sprofil() or pcsample(), by argument, counts the samples of two known
 * functions: main_spin, run by the main thread, and thread_spin, run by a
 * thread created after sampling started (no pthread_create wrapper exists in
 * a static program: the sampler's thread finder must find it). Each function
 * sits in a section of its own, so its address range is known exactly
 * (__start_/__stop_ symbols, GNU ld). Prints
 *   hz= main_samples= main_cpu= thread_samples= thread_cpu=
 *   main_signals= thread_signals=
 * (the sampling signals the sampler received while each function ran alone:
 * the main thread waits in pthread_join while the thread spins).
 * With a second argument "own-sigprof", the program installs its own SIGPROF
 * handler once sampling runs and raises SIGPROF once at the end: it must
 * see that one signal and none of the sampler's ticks, and get its handler
 * back from sigaction() (handler_calls= own_handler_reported=).
 * Work is bounded by CPU time (CLOCK_THREAD_CPUTIME_ID). */
#include <profil/profil.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

extern char __start_profil_main_spin[], __stop_profil_main_spin[];
extern char __start_profil_thread_spin[], __stop_profil_thread_spin[];

static double thread_cpu(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

#define SPIN_BODY                                      \
  volatile double x = 0;                               \
  double start = thread_cpu();                         \
  while (thread_cpu() - start < seconds)               \
    for (int i = 0; i < 300000; ++i) x += i * 0.5;     \
  return thread_cpu() - start;

__attribute__((noinline, section("profil_main_spin"))) double main_spin(double seconds) { SPIN_BODY }
__attribute__((noinline, section("profil_thread_spin"))) double thread_spin(double seconds) { SPIN_BODY }

static unsigned long long signals_so_far(void) {
  profil_stats stats;
  profil_get_stats(&stats);
  return (unsigned long long)stats.signals;
}

static double thread_seconds;
static unsigned long long thread_signals;
static void *worker(void *arg) {
  (void)arg;
  const unsigned long long before = signals_so_far();
  thread_seconds = thread_spin(0.3);
  thread_signals = signals_so_far() - before;
  return NULL;
}

static volatile sig_atomic_t handler_calls;
static void on_sigprof(int signo) {
  (void)signo;
  ++handler_calls;
}

static int in(uintptr_t pc, const char *start, const char *stop) {
  return pc >= (uintptr_t)start && pc < (uintptr_t)stop;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "profil";
  /* One region over both sections, 2 bytes a bin; or one region each. */
  uintptr_t low = (uintptr_t)__start_profil_main_spin, high = (uintptr_t)__stop_profil_main_spin;
  if ((uintptr_t)__start_profil_thread_spin < low) low = (uintptr_t)__start_profil_thread_spin;
  if ((uintptr_t)__stop_profil_thread_spin > high) high = (uintptr_t)__stop_profil_thread_spin;
  const size_t nbins = (high - low) / 2 + 1;
  unsigned short *bins = calloc(nbins, sizeof *bins);
  unsigned int *main_bins = calloc(4096, sizeof *main_bins), *thread_bins = calloc(4096, sizeof *thread_bins);
  const long max_pcs = 100000;
  uintptr_t *pcs = calloc(max_pcs, sizeof *pcs);
  int rc;
  if (strcmp(mode, "sprofil") == 0) {
    /* One bin per region (scale 2 would be the overflow bin: a tiny scale
     * maps the whole section to bin 0). */
    struct prof regions[2] = {
        {main_bins, 4096 * sizeof(unsigned int), (size_t)__start_profil_main_spin, 3},
        {thread_bins, 4096 * sizeof(unsigned int), (size_t)__start_profil_thread_spin, 3},
    };
    struct timeval tv;
    rc = sprofil(regions, 2, &tv, PROF_UINT);
  } else if (strcmp(mode, "pcsample") == 0) {
    rc = pcsample(pcs, max_pcs) < 0 ? -1 : 0;
  } else {
    rc = profil(bins, nbins * sizeof *bins, low, 65536);
  }
  if (rc != 0) {
    perror(mode);
    return 2;
  }
  const int own_sigprof = argc > 2 && strcmp(argv[2], "own-sigprof") == 0;
  if (own_sigprof) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_sigprof;
    sigemptyset(&action.sa_mask);
    if (sigaction(SIGPROF, &action, NULL) != 0) return 4;
  }
  const unsigned long long before = signals_so_far();
  const double main_seconds = main_spin(0.3);
  const unsigned long long main_signals = signals_so_far() - before;
  pthread_t thread;
  if (pthread_create(&thread, NULL, worker, NULL) != 0) return 3;
  pthread_join(thread, NULL);
  int own_handler_reported = 0;
  if (own_sigprof) {
    raise(SIGPROF);
    struct sigaction current;
    own_handler_reported = sigaction(SIGPROF, NULL, &current) == 0 && current.sa_handler == on_sigprof;
    printf("handler_calls=%d\nown_handler_reported=%d\n", (int)handler_calls, own_handler_reported);
  }
  const unsigned hz = profil_sampling_hz();
  unsigned long main_samples = 0, thread_samples = 0;
  if (strcmp(mode, "sprofil") == 0) {
    sprofil(NULL, 0, NULL, 0);
    for (int i = 0; i < 4096; ++i) {
      main_samples += main_bins[i];
      thread_samples += thread_bins[i];
    }
  } else if (strcmp(mode, "pcsample") == 0) {
    const long n = pcsample(NULL, 0);
    for (long i = 0; i < n && i < max_pcs; ++i) {
      main_samples += in(pcs[i], __start_profil_main_spin, __stop_profil_main_spin);
      thread_samples += in(pcs[i], __start_profil_thread_spin, __stop_profil_thread_spin);
    }
  } else {
    profil(NULL, 0, 0, 0);
    for (size_t i = 0; i < nbins; ++i) {
      const uintptr_t pc = low + 2 * i;
      if (in(pc, __start_profil_main_spin, __stop_profil_main_spin)) main_samples += bins[i];
      if (in(pc, __start_profil_thread_spin, __stop_profil_thread_spin)) thread_samples += bins[i];
    }
  }
  printf("hz=%u\nmain_samples=%lu\nmain_cpu=%.4f\nthread_samples=%lu\nthread_cpu=%.4f\nmain_signals=%llu\n"
         "thread_signals=%llu\n",
         hz, main_samples, main_seconds, thread_samples, thread_seconds, main_signals, thread_signals);
  return 0;
}
