/* Process trees for the `profil run` tests of what a run writes and says
 * (tests/run_test.cc). Modes (argv[1]):
 *   spawn N MS BIG_MS  N children that each use MS ms of CPU, one that uses
 *                      BIG_MS, and the parent BIG_MS; prints
 *                      "small PID" / "big PID" / "parent PID" and waits.
 *   orphan_kill        a child that, once the parent has exited (it is then
 *                      the subreaper's), kills itself with SIGKILL; the
 *                      parent exits 0 at once.
 *   linger             a child that prints "child PID" and reads stdin to
 *                      its end; the parent exits 0 at once.
 *   unfinished         a child leaves in $PROFIL_RUN_DIR what a process
 *                      killed while writing its dump leaves (the header,
 *                      written first, under the temporary name) and is
 *                      killed (SIGKILL); the parent waits and exits 0. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double process_cpu(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void burn(double seconds) {
  volatile double x = 0;
  double start = process_cpu();
  while (process_cpu() - start < seconds)
    for (int i = 0; i < 10000; ++i) x += i * 0.5;
}

static pid_t spawn(double seconds) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    burn(seconds);
    exit(0);
  }
  return pid;
}

/* Blocks until the parent has exited: the write end of the pipe closes. */
static void wait_for_parent_exit(int pipe_fds[2]) {
  char byte;
  close(pipe_fds[1]);
  while (read(pipe_fds[0], &byte, 1) != 0) {
  }
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  if (strcmp(mode, "spawn") == 0 && argc == 5) {
    int n = atoi(argv[2]);
    double small = atof(argv[3]) / 1000, big = atof(argv[4]) / 1000;
    for (int i = 0; i < n; ++i) printf("small %d\n", (int)spawn(small));
    printf("big %d\n", (int)spawn(big));
    printf("parent %d\n", (int)getpid());
    fflush(stdout);
    burn(big);
    while (wait(NULL) > 0) {
    }
    return 0;
  }
  if (strcmp(mode, "orphan_kill") == 0 || strcmp(mode, "linger") == 0) {
    int fds[2];
    if (pipe(fds) != 0) return 10;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
      if (strcmp(mode, "orphan_kill") == 0) {
        wait_for_parent_exit(fds);
        kill(getpid(), SIGKILL);
      }
      printf("child %d\n", (int)getpid());
      fflush(stdout);
      char buffer[256];
      while (read(0, buffer, sizeof buffer) > 0) {
      }
      return 0;
    }
    return 0;
  }
  if (strcmp(mode, "unfinished") == 0) {
    fflush(stdout);
    pid_t child = fork();
    if (child > 0) {
      int status;
      waitpid(child, &status, 0);
      return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL ? 0 : 12;
    }
    /* docs/run.md, "The profraw layout": magic, version, header_size, pid
     * ... run_id at offset 120. */
    unsigned char header[176] = "PROFRAW\n";
    uint32_t version = 1, size = sizeof header;
    int64_t pid = getpid();
    memcpy(header + 8, &version, 4);
    memcpy(header + 12, &size, 4);
    memcpy(header + 16, &pid, 8);
    const char* run_id = getenv("PROFIL_RUN_ID");
    if (run_id) memcpy(header + 120, run_id, strnlen(run_id, 56));
    /* The runtime's name: the run's token (the run id after its last '-'). */
    const char* token = run_id ? strrchr(run_id, '-') : NULL;
    char path[4096];
    snprintf(path, sizeof path, "%s/run_tree.%d.run-%s.profraw.tmp.%d", getenv("PROFIL_RUN_DIR"), (int)pid,
             token ? token + 1 : "", (int)pid);
    /* The fork child's placeholder, that temporary, exists already (empty). */
    int fd = open(path, O_WRONLY | O_CREAT, 0600);
    if (fd < 0 || write(fd, header, sizeof header) != (ssize_t)sizeof header) _exit(11);
    kill(getpid(), SIGKILL);
  }
  fprintf(stderr, "usage: run_tree spawn N MS BIG_MS | orphan_kill | linger | unfinished\n");
  return 2;
}
