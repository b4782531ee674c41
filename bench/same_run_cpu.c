// bench/same_run.sh's witness: runs a command and prints, on stderr, the
// CPU time (user + system, from the kernel's per-task accounting) of it
// and every descendant it waited for, recursively (RUSAGE_CHILDREN): the
// time both samplers should find, measured without sampling.
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc < 2) return 125;
  const pid_t pid = fork();
  if (pid == 0) {
    execvp(argv[1], argv + 1);
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  struct rusage u;
  getrusage(RUSAGE_CHILDREN, &u);
  fprintf(stderr, "same_run_cpu %.6f\n",
          u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
