/* A program that spends most of its CPU time in the kernel: reads of
 * /dev/zero, 64 KiB each, for the CPU seconds given (default 1), from
 * read_loop() called by main() (issue 33: kernel frames under the user
 * stack that made the system call). */
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static char buffer[65536];

static double cpu_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

__attribute__((noinline)) static void read_loop(int fd, double seconds) {
  const double end = cpu_seconds() + seconds;
  while (cpu_seconds() < end)
    for (int i = 0; i < 100; ++i)
      if (read(fd, buffer, sizeof buffer) < 0) exit(1);
}

int main(int argc, char** argv) {
  const int fd = open("/dev/zero", O_RDONLY);
  if (fd < 0) return 1;
  read_loop(fd, argc > 1 ? atof(argv[1]) : 1.0);
  return 0;
}
