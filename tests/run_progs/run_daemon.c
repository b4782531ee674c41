/* A program that leaves a daemon behind (issue 21: profil run --no-wait).
 *
 *   run_daemon CTL   forks; the child starts a session and forks the daemon,
 *                    then exits; the program prints "daemon <pid>", burns
 *                    0.1 s of CPU in main_burn and exits with status 3.
 *                    The daemon (standard streams on /dev/null) burns 0.2 s
 *                    in daemon_burn, waits until the file CTL/go exists
 *                    (2 minutes at most), burns 0.2 s more, creates
 *                    CTL/done and exits.
 * Nothing here depends on timing: the daemon waits for the test's go. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The loop in each function itself: a call to a shared one would be a tail
 * call, and the caller's frame would not be on the stack; a different step
 * in each, or the linker folds the two identical functions into one. */
#define BURN(seconds, step)                                   \
  do {                                                        \
    volatile double sink = 0;                                 \
    const double start = cpu_seconds();                       \
    while (cpu_seconds() - start < (seconds))                 \
      for (long i = 0; i < 20000; ++i) sink += (double)i * step; \
  } while (0)

static void __attribute__((noipa)) daemon_burn(double seconds) { BURN(seconds, 0.25); }
static void __attribute__((noipa)) main_burn(double seconds) { BURN(seconds, 0.5); }

static int exists(const char* dir, const char* name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  struct stat st;
  return stat(path, &st) == 0;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: run_daemon CTL\n");
    return 2;
  }
  const char* ctl = argv[1];
  int report[2];
  if (pipe(report) != 0) return 1;
  pid_t child = fork();
  if (child == 0) {
    setsid();
    pid_t daemon = fork();
    if (daemon != 0) {
      write(report[1], &daemon, sizeof daemon);
      _exit(0);
    }
    close(report[0]);
    close(report[1]);
    int null = open("/dev/null", O_RDWR);
    dup2(null, 0);
    dup2(null, 1);
    dup2(null, 2);
    daemon_burn(0.2);
    for (int i = 0; i < 12000 && !exists(ctl, "go"); ++i) usleep(10000);
    daemon_burn(0.2);
    char path[4096];
    snprintf(path, sizeof path, "%s/done", ctl);
    close(open(path, O_WRONLY | O_CREAT, 0644));
    return 0;
  }
  pid_t daemon = 0;
  if (read(report[0], &daemon, sizeof daemon) != sizeof daemon) return 1;
  waitpid(child, NULL, 0);
  printf("daemon %d\n", (int)daemon);
  fflush(stdout);
  main_burn(0.1);
  return 3;
}
