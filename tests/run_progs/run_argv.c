/* Prints its argv so that a test can compare it byte for byte: the count,
 * then each word between brackets, every byte that is not printable ASCII
 * (and the brackets and backslash themselves) as \xHH:
 *   argc 3
 *   [run_argv]
 *   [\x5b1,2,3\x5d]
 *   []
 * Exits with the status given by $RUN_ARGV_STATUS (default 0). */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  printf("argc %d\n", argc);
  for (int i = 0; i < argc; ++i) {
    putchar('[');
    for (const unsigned char* p = (const unsigned char*)argv[i]; *p; ++p) {
      if (*p < 0x20 || *p > 0x7e || *p == '[' || *p == ']' || *p == '\\')
        printf("\\x%02x", *p);
      else
        putchar(*p);
    }
    puts("]");
  }
  const char* status = getenv("RUN_ARGV_STATUS");
  return status ? atoi(status) : 0;
}
