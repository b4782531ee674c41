// One function called equally often from two callers with very different
// arguments: light() asks work() for 1,000 steps, heavy() for 9,000, so
// heavy's calls take 90 % of work's time. gcc -pg's call graph splits
// work's time between its callers by calls (50/50: gprof assumes every call
// takes the same time); the arcs profil writes from sampled stacks split it
// by samples through each edge (10/90). tests/gmon_call_graph_test.cc.
//
// Built with -fno-optimize-sibling-calls and noinline: a tail call would
// leave light() and heavy() off the stack.
#include <stdlib.h>

static volatile unsigned sink;

__attribute__((noinline)) void work(unsigned steps) {
  unsigned x = sink;
  for (unsigned i = 0; i < steps; ++i) x = x * 1103515245u + 12345u;  // a dependent chain: time ~ steps
  sink = x;
}

__attribute__((noinline)) void light(void) { work(1000); }
__attribute__((noinline)) void heavy(void) { work(9000); }

int main(int argc, char** argv) {
  const long rounds = argc > 1 ? atol(argv[1]) : 100000;
  for (long r = 0; r < rounds; ++r) {
    light();
    heavy();
  }
  return 0;
}
