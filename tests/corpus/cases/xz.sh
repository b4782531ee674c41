#!/usr/bin/env bash
# xz -9 -T2: the compression runs in a worker thread that blocks every
# signal, the main thread only waits.
source "$(dirname "$0")/../lib.sh"
need xz awk
# 1.4 MB of text that compresses slowly: ~1.4 s of CPU at -9.
awk 'BEGIN { srand(11); for (i = 0; i < 45000; i++) printf "%d %08x record %d\n", int(rand() * 1e9), int(rand() * 2^31), i }' \
  > "$work/in/input.txt"
compare xz_9_T2 -- xz -9 -T2 -c input.txt
finish
