#!/usr/bin/env bash
# Stacks from end to end (issue 13): `profil run` (stacks on by default) of
# a program built -O2 -fomit-frame-pointer with a known call tree
# (unwind_progs/callgraph.c: cg_a -> cg_leaf one unit, cg_b -> cg_leaf two,
# qsort calling cg_compare back through libc), read back through the pprof
# file with `profil report --format folded`: whole stacks, root first; the
# callers' shares within 4 binomial sigmas of 1:2; nearly every sample
# unwound to _start; unwound live and on the perf ring. With
# --no-stacks the same run has leaves alone.
# Usage: run_stacks.sh PROFIL WORKLOAD
set -euo pipefail
profil=$1 workload=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# Each way stacks are taken: perf-signal (unwound live in the signal
# handler, as on the cpu clock) and perf (the ring: unwound at the drain
# from the kernel's copies). Not the cpu clock: its timers fire at the
# kernel's tick, and beside a busy loop the ticks fell in phase with the
# workload's rounds (cg_b's share 0.84 for 0.67 expected, 4 sigmas 0.08).
for clock in perf-signal perf; do
"$profil" run --clock $clock --hz 1000 -o "$dir/on-$clock" -- "$workload" 1.5 2> "$dir/err" || { cat "$dir/err"; exit 1; }
"$profil" report --format folded "$dir"/on-$clock/unwind_workload.*.pb.gz > "$dir/folded"
sum() { awk -v re="$1" '$0 ~ re { n += $NF } END { print n + 0 }' "$dir/folded"; }
total=$(sum '.')
a=$(sum ';main;cg_round;cg_a;cg_leaf ')
b=$(sum ';main;cg_round;cg_b;cg_leaf ')
qsort=$(sum ';main;cg_round;cg_sort;.*qsort.*;cg_compare ')
from_start=$(sum '^_start;')
echo "$clock: samples $total: a $a b $b qsort->cg_compare $qsort from _start $from_start ($(grep -o '[a-z-]* clock at' "$dir/err"))"
[ "$((a + b))" -ge 100 ] || { echo "too few samples under cg_a/cg_b:"; head "$dir/folded"; exit 1; }
awk -v a="$a" -v b="$b" 'BEGIN { n = a + b; p = b / n; s = sqrt(2 / 9 / n);
  if (p < 2 / 3 - 4 * s || p > 2 / 3 + 4 * s) { printf "b share %.3f, expected 0.667 +- %.3f\n", p, 4 * s; exit 1 } }'
[ "$qsort" -gt 0 ] || { echo "no stack through qsort's callback"; grep cg_compare "$dir/folded" | head; exit 1; }
# At least 90 % unwound to _start (the rest marked [truncated]).
[ $((from_start * 10)) -ge $((total * 9)) ] || { echo "only $from_start of $total from _start"; head "$dir/folded"; exit 1; }
done

"$profil" run --no-stacks --hz 1000 -o "$dir/off" -- "$workload" 0.3 2> "$dir/err" || { cat "$dir/err"; exit 1; }
"$profil" report --format folded "$dir"/off/unwind_workload.*.pb.gz > "$dir/flat"
# A leaf's inline frames are frames (issue 22: folded marks them
# " (inline)"), so a leaf alone may read "outer;inner (inline)"; any other
# frame after the first is a caller --no-stacks must not have written.
awk '{ sub(/ [0-9]+$/, ""); n = split($0, f, ";");
       for (i = 2; i <= n; ++i) if (f[i] !~ / \(inline\)$/) { print "--no-stacks wrote a caller: " $0; bad = 1 } }
     END { exit bad }' "$dir/flat"
echo ok
