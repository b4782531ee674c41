// A daemon-like program: it forks, the parent exits at once, the child
// starts a session of its own and closes every inherited descriptor above
// stderr (closefrom(3), as daemons do), then burns CPU and prints its
// result.
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(void) {
  pid_t pid = fork();
  if (pid < 0) return 1;
  if (pid > 0) return 0;
  setsid();
  closefrom(3);
  volatile unsigned long x = 1;
  unsigned long sum = 0;
  for (unsigned long i = 0; i < 1100000000UL; ++i) {
    x = x * 6364136223846793005UL + 1442695040888963407UL;
    sum += x >> 60;
  }
  printf("daemon sum %lu\n", sum);
  return 0;
}
