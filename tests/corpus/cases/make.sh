#!/usr/bin/env bash
# make -j2 of a small generated project: make, a gcc driver per file, each
# with its cc1 and as, two at a time, then the link; the program it built
# is run too.
source "$(dirname "$0")/../lib.sh"
need make gcc
cd "$work/in" || exit 1
for n in 1 2 3; do
  awk -v n=$n 'BEGIN {
    for (f = 0; f < 40; f++) {
      printf "int m%d_%d(int x) {\n  int s = x;\n  for (int i = 0; i < x; i++) {\n", n, f
      for (c = 0; c < 6; c++) printf "    if ((s ^ i) %% %d == %d) s = s * %d + i; else s -= %d;\n", c + 3, c, c + 5, f + c
      printf "  }\n  return s;\n}\n"
    }
    printf "int m%d(int x) {\n  int s = 0;\n", n
    for (f = 0; f < 40; f++) printf "  s += m%d_%d(x + %d);\n", n, f, f
    printf "  return s;\n}\n"
  }' > m$n.c
done
cat > main.c <<'C'
#include <stdio.h>
int m1(int), m2(int), m3(int);
int main(void) {
  printf("%d\n", m1(100) + m2(200) + m3(300));
  return 0;
}
C
cat > Makefile <<'MK'
OBJS = main.o m1.o m2.o m3.o
prog: $(OBJS)
	gcc -o $@ $(OBJS)
	./prog
%.o: %.c
	gcc -O2 -c $< -o $@
MK
compare make_j2 --files "prog main.o m1.o m2.o m3.o" -- make -s -j2
finish
