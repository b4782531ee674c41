/* profil_openbsd(): OpenBSD 2025's profil(2) in a gcc -pg program linked
 * with libprofil. The buffer is laid out as OpenBSD's gcrt0 does it: a
 * struct gmonhdr, one 16-bit bin per 4 bytes of text (scale 32768), and
 * room for the arcs.
 *   errors DIR  every errno of the page, then profiles into DIR (a dirfd)
 *               and chdir()s away before exit;
 *   profdir     dirfd -1 with $PROFDIR set by the caller;
 *   cwd         dirfd -1 without $PROFDIR, then chdir("elsewhere");
 *   fork        as cwd, and a child working ~0.3 s writes its own file;
 *   tight       as cwd without the chdir, with room in the buffer for one
 *               arc and a short hot loop (under 2000 calls of thread_cpu),
 *               so main -> called_2000 is the busiest arc;
 *   _exit       as profdir, ending in _exit(5): no atexit handler runs;
 *   abort       as profdir, ending in abort(): death by SIGABRT.
 * Prints hot_cpu=, child_cpu=, child_pid=; exits 1 on a wrong result. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "profil/profil.h"

extern char __executable_start, etext;

static double thread_cpu(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}
volatile double sink;
__attribute__((noinline)) void called_2000(void) { sink += 1; }
__attribute__((noinline)) double hot_loop(double seconds) {
  volatile double x = 0;
  double start = thread_cpu();
  while (thread_cpu() - start < seconds)
    for (int i = 0; i < 300000; ++i) x += i * 0.5;
  return thread_cpu() - start;
}
__attribute__((noinline)) double child_work(double seconds) { return hot_loop(seconds); }

static int failures;
static void expect(const char *what, int got, int want_errno) {
  int error = got == -1 ? errno : 0;
  if (error != want_errno) {
    printf("FAIL %s: returned %d errno %d (%s), want errno %d (%s)\n", what, got, error, strerror(error),
           want_errno, strerror(want_errno));
    ++failures;
  } else {
    printf("ok %s\n", what);
  }
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "cwd";
  const unsigned long low = (unsigned long)&__executable_start;
  const size_t samplesize = ((size_t)(&etext - &__executable_start) / 4 + 1) * 2;
  const size_t header = 40; /* struct gmonhdr on LP64 */
  const int tight = strcmp(mode, "tight") == 0;
  const size_t buflen = header + samplesize + (tight ? 1 : 256) * 24;
  void *buf = calloc(1, buflen), *other = calloc(1, buflen);
  int dirfd = -1;

  if (strcmp(mode, "errors") == 0) {
    expect("scale 65537: EINVAL", profil_openbsd(buf, buflen, samplesize, low, 65537, -1), EINVAL);
    int closed = dup(0);
    close(closed);
    expect("closed dirfd: EBADF", profil_openbsd(buf, buflen, samplesize, low, 32768, closed), EBADF);
    expect("negative dirfd: EBADF", profil_openbsd(buf, buflen, samplesize, low, 32768, -7), EBADF);
    int file = open(argv[0], O_RDONLY);
    expect("file dirfd: ENOTDIR", profil_openbsd(buf, buflen, samplesize, low, 32768, file), ENOTDIR);
    close(file);
    expect("buffer too small: EINVAL", profil_openbsd(buf, 16, 8, low, 32768, -1), EINVAL);
    expect("scale 0 before any buffer: off", profil_openbsd(NULL, 0, 0, 0, 0, -1), 0);
    dirfd = open(argv[2], O_RDONLY | O_DIRECTORY);
    expect("first buffer", profil_openbsd(buf, buflen, samplesize, low, 32768, dirfd), 0);
    close(dirfd); /* the library keeps its own descriptor */
    expect("another buffer: EALREADY", profil_openbsd(other, buflen, samplesize, low, 32768, -1), EALREADY);
    expect("another length: EALREADY", profil_openbsd(buf, buflen - 24, samplesize, low, 32768, -1), EALREADY);
    expect("scale 65537 later: EINVAL", profil_openbsd(buf, buflen, samplesize, low, 65537, -1), EINVAL);
    expect("scale 0: off", profil_openbsd(buf, buflen, samplesize, low, 0, -1), 0);
    expect("same buffer again: on", profil_openbsd(buf, buflen, samplesize, low, 32768, -1), 0);
    if (chdir("/") != 0) return 1;
  } else {
    expect("first buffer", profil_openbsd(buf, buflen, samplesize, low, 32768, -1), 0);
    if (strcmp(mode, "cwd") == 0 || strcmp(mode, "fork") == 0)
      if (chdir("elsewhere") != 0) return 1;
  }
  for (int i = 0; i < 2000; ++i) called_2000();
  printf("hot_cpu=%.4f\n", hot_loop(tight ? 0.05 : 0.4));
  fflush(stdout);
  if (strcmp(mode, "_exit") == 0) _exit(failures ? 1 : 5);
  if (strcmp(mode, "abort") == 0) abort();
  if (strcmp(mode, "fork") == 0) {
    pid_t child = fork();
    if (child == 0) {
      printf("child_cpu=%.4f\nchild_pid=%d\n", child_work(0.3), (int)getpid());
      return 0;
    }
    waitpid(child, NULL, 0);
  }
  return failures ? 1 : 0;
}
