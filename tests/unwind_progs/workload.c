/* The call tree of callgraph.c as an ordinary program, not linked with
 * libprofil, for the preload's PROFIL_STACKS=1 (tests/unwind.cmake): runs
 * rounds until argv[1] seconds of CPU time have passed. */
#include <signal.h>
#include <stdlib.h>
#include <time.h>

void cg_round(void (*plugin_work)(long));
void cg_on_signal(int);

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? atof(argv[1]) : 0.5;
  signal(SIGUSR1, cg_on_signal);
  struct timespec ts;
  do {
    cg_round(0);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  } while (ts.tv_sec + ts.tv_nsec / 1e9 < seconds);
  return 0;
}
