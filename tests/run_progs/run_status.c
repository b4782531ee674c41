/* What `profil run` makes of how the processes of a run end
 * (tests/run_status_test.cc). Modes (argv[1]):
 *   kill-children N   burns 0.2 s, forks N children that wait in pause(),
 *                     SIGKILLs and reaps each (as strace does its probe
 *                     child); prints "killed N", exits 0
 *   traceme-stop      a child that, once the parent has exited (it is then
 *                     the subreaper's), calls PTRACE_TRACEME and raises
 *                     SIGSTOP; the parent prints "child PID" and exits 0
 *   traceme-exec      the same child execs this program ("exec-target")
 *                     instead, which prints "exec'd image ran" and exits 0
 *   drop-child        (as root) a child that becomes nobody, burns 0.2 s and
 *                     exits 0; the parent waits for it and exits 0
 *   final-dump-fails  burns until its first checkpoint dump is in
 *                     $PROFIL_RUN_DIR (0.1 s at least), then limits the size
 *                     of the files it may write to 1 KiB (RLIMIT_FSIZE,
 *                     SIGXFSZ ignored: a write past it fails with EFBIG) and
 *                     exits 0: its final dump, some KiB of /proc/self/maps
 *                     alone, cannot be written; a line on stderr (a file
 *                     in the tests, under 1 KiB so far) still can */
#define _GNU_SOURCE
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
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

/* A file of this process's in the run directory: "run_status.<pid>.run-...profraw". */
static int has_dump(void) {
  const char* dir = getenv("PROFIL_RUN_DIR");
  if (dir == NULL) return 1;
  char prefix[64];
  snprintf(prefix, sizeof prefix, "run_status.%d.run-", (int)getpid());
  DIR* d = opendir(dir);
  if (d == NULL) return 1;
  int found = 0;
  for (struct dirent* e; !found && (e = readdir(d)) != NULL;) {
    size_t n = strlen(e->d_name);
    found = strncmp(e->d_name, prefix, strlen(prefix)) == 0 && n > 8 && strcmp(e->d_name + n - 8, ".profraw") == 0;
  }
  closedir(d);
  return found;
}

/* The child of traceme-*: waits until its parent has exited and it has
 * been given to another (the subreaper), then makes that one its tracer. */
static void orphan_and_traceme(int fds[2], pid_t parent) {
  char byte;
  close(fds[1]);
  while (read(fds[0], &byte, 1) != 0) {
  }
  while (getppid() == parent) usleep(1000);
  if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) != 0) _exit(20);
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  if (strcmp(mode, "kill-children") == 0 && argc == 3) {
    int n = atoi(argv[2]);
    burn(0.2);
    int ready[2];
    if (pipe(ready) != 0) return 10;
    pid_t* children = calloc((size_t)n, sizeof *children);
    for (int i = 0; i < n; ++i) {
      fflush(stdout);
      children[i] = fork();
      if (children[i] < 0) return 11;
      if (children[i] == 0) {
        (void)!write(ready[1], "r", 1);
        for (;;) pause();
      }
    }
    for (int i = 0; i < n; ++i) {
      char byte;
      if (read(ready[0], &byte, 1) != 1) return 12;
    }
    for (int i = 0; i < n; ++i) kill(children[i], SIGKILL);
    for (int i = 0; i < n; ++i) {
      int status;
      if (waitpid(children[i], &status, 0) != children[i] || !WIFSIGNALED(status)) return 13;
    }
    printf("killed %d\n", n);
    return 0;
  }
  if (strcmp(mode, "traceme-stop") == 0 || strcmp(mode, "traceme-exec") == 0) {
    int fds[2];
    if (pipe(fds) != 0) return 10;
    const pid_t parent = getpid();
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
      orphan_and_traceme(fds, parent);
      if (strcmp(mode, "traceme-stop") == 0) {
        raise(SIGSTOP);
        _exit(0);
      }
      execl("/proc/self/exe", argv[0], "exec-target", (char*)NULL);
      _exit(21);
    }
    printf("child %d\n", (int)child);
    return 0;
  }
  if (strcmp(mode, "exec-target") == 0) {
    printf("exec'd image ran\n");
    return 0;
  }
  if (strcmp(mode, "drop-child") == 0) {
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
      if (setgid(65534) != 0 || setuid(65534) != 0) _exit(9);
      burn(0.2);
      _exit(0);
    }
    int status;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return 14;
    return 0;
  }
  if (strcmp(mode, "final-dump-fails") == 0) {
    double start = process_cpu();
    while ((process_cpu() - start < 0.1 || !has_dump()) && process_cpu() - start < 10) burn(0.01);
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit limit = {1024, 1024};
    if (setrlimit(RLIMIT_FSIZE, &limit) != 0) return 15;
    return 0;
  }
  fprintf(stderr,
          "usage: run_status kill-children N | traceme-stop | traceme-exec | drop-child | final-dump-fails\n");
  return 2;
}
