// bench/every.sh's program: CPU-bound work in four functions of known
// weights (1:2:3:4 of each round's steps), so that a profile's shares are
// known and two profiles of it can be compared, for the seconds of wall
// time given (--every cuts snapshots by wall time). It prints its own CPU
// time (getrusage) and the rounds it did: the CPU a round costs, with and
// without snapshots, is what they cost the program.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static volatile uint64_t sink;

// noipa: each a function of its own in the binary (no folding of the four
// identical bodies, no hoisting of a call the compiler sees is pure).
#define WORK(name, a, b, c)                                   \
  __attribute__((noipa)) static uint64_t name(uint64_t x, long n) { \
    for (long i = 0; i < n; ++i) {                            \
      x ^= x << a;                                            \
      x ^= x >> b;                                            \
      x ^= x << c;                                            \
    }                                                         \
    return x;                                                 \
  }
WORK(work_one, 13, 7, 17)
WORK(work_two, 11, 9, 19)
WORK(work_three, 5, 15, 27)
WORK(work_four, 21, 35, 4)

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? atof(argv[1]) : 1;
  // Rounds of ~0.2 ms, each call's length drawn from 0.5..1.5 times its
  // mean: a program as regular as the sampling timer would put its
  // samples in step with its loop (a 1.9 ms round sampled every 2 ms),
  // and the shares of two runs would differ by more than binomial error.
  const long step = 10000;
  uint64_t draw = 1;
  const double end = now() + seconds;
  long r = 0;
  for (; now() < end; ++r) {
    long n[4];
    for (int k = 0; k < 4; ++k) {
      draw = draw * 6364136223846793005ull + 1442695040888963407ull;
      n[k] = (long)((k + 1) * step * (0.5 + (double)(draw >> 11) / 9007199254740992.0));
    }
    sink += work_one(sink + 1, n[0]);
    sink += work_two(sink + 2, n[1]);
    sink += work_three(sink + 3, n[2]);
    sink += work_four(sink + 4, n[3]);
  }
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  printf("cpu %.6f rounds %ld\n", u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6, r);
  return 0;
}
