# The generated C file cc1 compiles in the benchmarks (bench/unwind.sh,
# bench/views.sh): 500 functions of loops, switches and recursive calls,
# for deep compiler stacks. Not executable: bench/run.sh runs only the
# scripts and programs of this directory.
#   python3 big_c.py OUT.c
import sys
with open(sys.argv[1], 'w') as f:
    f.write('#include <stdlib.h>\n')
    for i in range(500):
        f.write(f'static int f{i}(int *a, int n) {{ int s = 0; for (int i = 0; i < n; ++i) {{ if (a[i] % {i % 7 + 2}) s += a[i] * {i}; else s ^= a[(i + {i}) % n]; }} switch (s & 7) {{ case 0: return s + {i}; case 1: return s * 3; case 2: return f{max(i - 1, 0)}(a, n / 2); default: return s; }} }}\n')
    f.write('int main(void) { int a[64]; for (int i = 0; i < 64; ++i) a[i] = rand(); int s = 0;\n')
    for i in range(500):
        f.write(f' s += f{i}(a, 64);\n')
    f.write(' return s & 1; }\n')
