#!/usr/bin/env bash
# The share perf record gives a function (issue 34, run_jit_*.sh): runs
# COMMAND under perf record -g at 1000 Hz of CPU time (cpu-clock, as
# profil's task-clock), every thread, and prints "<samples whose leaf
# symbol holds PATTERN> <all samples>". Exit 77 without perf or where the
# kernel refuses it.
# Usage: perf_leaf_share.sh DIR PATTERN COMMAND...
set -uo pipefail
dir=$1 pattern=$2
shift 2
command -v perf > /dev/null || { echo "no perf"; exit 77; }
perf record -q -F 1000 -g -e cpu-clock -o "$dir/perf.data" -- "$@" > /dev/null 2> "$dir/perf.err" ||
  { echo "perf record refused:"; cat "$dir/perf.err"; exit 77; }
perf script -i "$dir/perf.data" -G -F ip,sym 2> /dev/null |
  awk -v p="$pattern" 'NF { n++; if (index($0, p)) h++ } END { print h + 0, n + 0 }'
