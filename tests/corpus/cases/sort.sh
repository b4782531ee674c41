#!/usr/bin/env bash
# coreutils sort on a large file, alone and in a pipeline. sort installs a
# handler for SIGPROF (among other signals, to remove its temporary files),
# and sorts with threads.
source "$(dirname "$0")/../lib.sh"
need sort awk cksum
# 1 100 000 lines, 33 MB: ~1.5 s of CPU for sort -n.
awk 'BEGIN { srand(7); for (i = 0; i < 1100000; i++) printf "%d %08x line%d\n", int(rand() * 1e9), int(rand() * 2^31), i }' \
  > "$work/in/big.txt"
compare sort_file --files sorted.txt -- sort -n -o sorted.txt big.txt
compare sort_pipeline -- sh -c 'tr a-f A-F < big.txt | sort -n | cksum'
finish
