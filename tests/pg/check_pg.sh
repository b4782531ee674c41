#!/usr/bin/env bash
# gcc -pg programs linked with libprofil write files GNU gprof reads:
# exact call counts (also from two threads at once), the hot function first,
# the call graph naming caller and callee, and a forked child's own file
# with its own work timed (glibc's child file shows 0.00 s for it).
set -euo pipefail
prog=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
fail() { echo "FAIL: $*"; exit 1; }

"$prog" fork
[ -f gmon.out ] || fail "no gmon.out"
child=$(ls gmon.out.* 2>/dev/null | head -1)
[ -n "$child" ] || fail "no child file gmon.out.PID"

flat=$(gprof -b -p "$prog" gmon.out)
echo "$flat" | head -12
calls() { echo "$flat" | awk -v f="$1" '$NF == f { print $(NF-3) }'; }
[ "$(calls called_2000)" = 2000 ] || fail "called_2000: $(calls called_2000) calls, want 2000"
[ "$(calls per_thread)" = 6000 ] || fail "per_thread: $(calls per_thread) calls, want 6000 (two threads)"
first=$(echo "$flat" | awk '$1 ~ /^[0-9.]+$/ { print $NF; exit }')
[ "$first" = leaf ] || fail "hot function first: got $first, want leaf"
seconds=$(echo "$flat" | awk '$NF == "leaf" { print $3; exit }')
awk -v s="$seconds" 'BEGIN { exit !(s >= 0.3 && s <= 0.6) }' || fail "leaf: $seconds s, want ~0.4"

graph=$(gprof -b -q "$prog" gmon.out)
echo "$graph" | grep -Eq '2000/2000 +main' || fail "call graph: main -> called_2000 not named"

child_flat=$(gprof -b -p "$prog" "$child")
echo "$child_flat" | head -7
child_seconds=$(echo "$child_flat" | awk '$NF == "leaf" { print $3; exit }')
awk -v s="$child_seconds" 'BEGIN { exit !(s >= 0.2 && s <= 0.45) }' || fail "child: $child_seconds s, want ~0.3"
[ "$(echo "$child_flat" | awk '$NF == "called_2000" { print $(NF-3) }')" = "" ] || fail "child file holds the parent's calls"

# GMON_OUT_PREFIX and PROFDIR.
mkdir out
GMON_OUT_PREFIX=run PROFDIR="$work/out" "$prog"
ls out/run.* >/dev/null 2>&1 || fail "GMON_OUT_PREFIX/PROFDIR: no out/run.PID"
echo "pg: ok"
