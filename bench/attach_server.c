/* bench/attach.sh's target: a server-like program. The main thread waits in
 * epoll_wait (a timerfd every 10 ms stands for requests); two workers do
 * units of work and count them. Every 0.5 s it prints "rate N" (units per
 * second of both workers), for SECONDS (argv[1]). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static atomic_long g_units;
static atomic_int g_stop;

__attribute__((noinline)) static double unit_of_work(double x) {
  for (int i = 0; i < 2000; ++i) x = x * 1.0000001 + 0.5 / (i + 1.0);
  return x;
}
static void* worker(void* arg) {
  (void)arg;
  volatile double x = 1;
  while (!atomic_load(&g_stop)) {
    x = unit_of_work(x);
    atomic_fetch_add(&g_units, 1);
  }
  return NULL;
}
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
int main(int argc, char** argv) {
  const double seconds = argc > 1 ? atof(argv[1]) : 10;
  pthread_t w[2];
  for (int i = 0; i < 2; ++i) pthread_create(&w[i], NULL, worker, NULL);
  int ep = epoll_create1(0), tfd = timerfd_create(CLOCK_MONOTONIC, 0);
  struct itimerspec every = {{0, 10000000}, {0, 10000000}};
  timerfd_settime(tfd, 0, &every, NULL);
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = tfd};
  epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev);
  const double start = now();
  double last = start;
  long last_units = 0;
  printf("pid %d\n", getpid());
  fflush(stdout);
  while (now() - start < seconds) {
    struct epoll_event got;
    if (epoll_wait(ep, &got, 1, 100) == 1) {
      unsigned long long ticks;
      if (read(tfd, &ticks, sizeof ticks) < 0) break;
    }
    const double t = now();
    if (t - last >= 0.5) {
      const long units = atomic_load(&g_units);
      printf("rate %.0f %.1f\n", (units - last_units) / (t - last), t - start);
      fflush(stdout);
      last = t;
      last_units = units;
    }
  }
  atomic_store(&g_stop, 1);
  for (int i = 0; i < 2; ++i) pthread_join(w[i], NULL);
  return 0;
}
