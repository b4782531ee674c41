#!/usr/bin/env bash
# gcc -O2 -c on a large generated C file: the driver runs cc1, then as; each
# is its own process, and cc1 uses most of the CPU.
source "$(dirname "$0")/../lib.sh"
need gcc
# 100 functions of loops and switches: ~1 s of cc1 at -O2.
awk 'BEGIN {
  for (f = 0; f < 100; f++) {
    printf "int f%d(int *a, int n) {\n  int s = %d;\n  for (int i = 0; i < n; i++) {\n", f, f
    printf "    switch ((a[i] + %d) & 7) {\n", f
    for (c = 0; c < 8; c++) printf "    case %d: s = s * %d + a[i] / %d; break;\n", c, c + 3, c + 2
    printf "    }\n    if (s > %d) s -= a[(i * %d) %% n];\n  }\n  return s;\n}\n", 1000 + f, f + 1
  }
  printf "int all(int *a, int n) {\n  int s = 0;\n"
  for (f = 0; f < 100; f++) printf "  s += f%d(a, n);\n", f
  printf "  return s;\n}\n"
}' > "$work/in/big.c"
compare gcc_O2_c --files big.o -- gcc -O2 -c big.c -o big.o
finish
