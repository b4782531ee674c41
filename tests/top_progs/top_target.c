/* The target of tests/top_tmux.sh (profil top, issue 33). Modes:
 *   burn    the main thread loops in outer_work, which calls hot_leaf for
 *           3 units of work and cool_leaf for 1: by self, hot_leaf has
 *           three times cool_leaf's CPU; by total, outer_work has both
 *   fork    a child (its own process) loops in child_work; the parent's
 *           main thread and one more thread loop in parent_work
 *   faults  loops in fault_leaf, writing each page of a fresh mapping once
 *           (a page fault each), and in hot_leaf (none): by page faults,
 *           fault_leaf has nearly all of them (top --event page-faults)
 * Either runs until killed, at most 600 s of wall time (a cap, so that a
 * test that fails leaves nothing burning). */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static volatile double g_sink;
static time_t g_until;

__attribute__((noinline, noclone)) void hot_leaf(int units) {
  for (int i = 0; i < units * 20000; ++i) g_sink += i * 0.5;
}
__attribute__((noinline, noclone)) void cool_leaf(int units) {
  for (int i = 0; i < units * 20000; ++i) g_sink += i * 0.25;
}
__attribute__((noinline)) void outer_work(void) {
  while (time(NULL) < g_until) {
    hot_leaf(3);
    cool_leaf(1);
  }
}
__attribute__((noinline)) void child_work(void) {
  while (time(NULL) < g_until)
    for (int i = 0; i < 20000; ++i) g_sink += i * 0.5;
}
__attribute__((noinline)) void parent_work(void) {
  while (time(NULL) < g_until)
    for (int i = 0; i < 20000; ++i) g_sink += i * 0.5;
}
__attribute__((noinline, noclone)) void fault_leaf(void) {
  const size_t pages = 256;
  char* p = mmap(NULL, pages * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return;
  madvise(p, pages * 4096, MADV_NOHUGEPAGE); /* a fault per 4 KiB page */
  for (size_t i = 0; i < pages; ++i) p[i * 4096] = (char)i;
  munmap(p, pages * 4096);
}
static void* parent_thread(void* unused) {
  (void)unused;
  parent_work();
  return NULL;
}

int main(int argc, char** argv) {
  g_until = time(NULL) + 600;
  if (argc > 1 && strcmp(argv[1], "fork") == 0) {
    if (fork() == 0) {
      prctl(PR_SET_PDEATHSIG, SIGTERM);  /* ends with the parent */
      child_work();
      return 0;
    }
    pthread_t thread;
    pthread_create(&thread, NULL, parent_thread, NULL);
    parent_work();
    pthread_join(thread, NULL);
    return 0;
  }
  if (argc > 1 && strcmp(argv[1], "faults") == 0) {
    while (time(NULL) < g_until) {
      fault_leaf();
      hot_leaf(1);
    }
    return 0;
  }
  outer_work();
  return 0;
}
