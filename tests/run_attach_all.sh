#!/usr/bin/env bash
# profil attach --all (issue 33): every process of the machine, one profile
# each. A program running before the attach and one started after its
# "attached" line each get a profile of their own with their functions
# (read_loop of run_syscalls), and report --by process names both pids.
# Usage: run_attach_all.sh PROFIL PROGRAM (tests/run_progs/run_syscalls.c)
set -euo pipefail
profil=$1 program=$2
[ "$(id -u)" = 0 ] || { echo "skipped: whole-machine events need root or CAP_PERFMON"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/profil-all.XXXXXX")
before=""; after=""; attach=""
trap 'kill $before $after $attach 2>/dev/null; rm -rf "$work"' EXIT

"$program" 30 & before=$!
# Running before the attach means exec'd before it: until then the child is
# the shell's copy, and an exec between profil's reading of /proc and its
# events' start is seen by neither (a loaded run named it bash.PID).
program_file=$(readlink -f "$program")
for _ in $(seq 3000); do
  [ "$(readlink "/proc/$before/exe" 2> /dev/null)" = "$program_file" ] && break
  sleep 0.01
done
[ "$(readlink "/proc/$before/exe" 2> /dev/null)" = "$program_file" ] || { echo "FAIL: $program did not start"; exit 1; }
# The window ends when the program started after the attach has used a
# second of CPU and ended (its own clock, not ours), or at 60 s.
# The file is made first: tail -f may start before the attach's shell has
# opened it, and on a file not there it ends at once, grep with it, and
# set -e ended the test in silence (the attach held ctest's pipe 60 s).
: > "$work/stderr"
"$profil" attach --all --duration 60s -o "$work/out" 2> "$work/stderr" & attach=$!
grep -m1 "attached to every process" < <(tail -f "$work/stderr" 2>/dev/null) > /dev/null ||
  { echo "FAIL: no 'attached' line:"; cat "$work/stderr"; exit 1; }
"$program" 1 & after=$!
status=0; wait "$after" || status=$?; after=""
[ "$status" = 0 ] || { echo "FAIL: $program 1 exited $status"; exit 1; }
kill -INT "$attach"; status=0; wait "$attach" || status=$?; attach=""
[ "$status" = 0 ] || { echo "profil attach --all exited $status:"; cat "$work/stderr"; exit 1; }
cat "$work/stderr"
ls "$work/out"
for f in "$work"/out/run_syscalls.*.pb.gz; do
  # Into a file: grep -q stops at the first match, and pipefail would take
  # the report's SIGPIPE for a missing read_loop (a loaded run failed so).
  "$profil" report --format folded "$f" > "$work/folded"
  grep -q read_loop "$work/folded" || { echo "FAIL: $f has no read_loop"; exit 1; }
done
n=$(ls "$work"/out/run_syscalls.*.pb.gz | wc -l)
[ "$n" -ge 2 ] || { echo "FAIL: $n profiles of run_syscalls, 2 expected (one before the attach, one after)"; exit 1; }
"$profil" report --by process "$work"/out/run_syscalls.*.pb.gz 2> /dev/null > "$work/by_process"
grep -q " $before  *run_syscalls" "$work/by_process" || { echo "FAIL: --by process lacks $before:"; cat "$work/by_process"; exit 1; }
echo ok
