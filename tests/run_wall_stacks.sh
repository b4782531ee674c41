#!/usr/bin/env bash
# The wall clock's blocked stacks (issue 22): a thread blocked in nanosleep
# through wait_outer -> wait_inner (unwind-table code without frame
# pointers) while another burns CPU, profiled with `profil run --clock
# wall` from inside (the watcher thread in the program) or from outside
# (profil's poller, the stack read with process_vm_readv). Its blocked
# samples are unwound from the pc and sp of /proc/PID/task/TID/syscall,
# under the sleeper's own thread:
# - nearly all of them (>= 90 %, less 3 binomial sigmas) reach
#   wait_outer;wait_inner, under the thread named "sleeper";
# - their count is the time the program measured asleep (less the time
#   the sleeper then waited for a CPU: run_wall_blocked.c), and their share
#   of the two threads' samples is sleep / (sleep + the burner's CPU time),
#   within 4.5 sigmas of the sample count plus 2 points for the edges;
# - no sleep ended early or with EINTR (nothing signalled the sleeper).
# The watcher's counts (PROFIL_STACKS_STATS) are printed from inside only.
# Usage: run_wall_stacks.sh PROFIL PROGRAM --inside|--outside
set -euo pipefail
profil=$1 program=$2 source=${3:---inside}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
hz=1000
touch "$dir/stats"
PROFIL_STACKS_STATS="$dir/stats" "$profil" run "$source" --clock wall --hz $hz -o "$dir/out" -- "$program" 1.5 \
  > "$dir/measured" 2> "$dir/err" || { cat "$dir/err"; exit 1; }
"$profil" report --threads --format folded "$dir"/out/*.pb.gz > "$dir/folded"
read -r _ sleeps _ early _ slept _ life _ burner_cpu _ runqueue < "$dir/measured"
sum() { awk -v re="$1" '$0 ~ re { n += $NF } END { print n + 0 }' "$dir/folded"; }
leaf='(__nanosleep|clock_nanosleep|__clock_nanosleep[^;]*)'
blocked=$(sum "^sleeper [0-9]+;.*;$leaf [0-9]+\$")
whole=$(sum "^sleeper [0-9]+;.*;wait_outer[^;]*;wait_inner[^;]*;.*$leaf [0-9]+\$")
sleeper=$(sum '^sleeper [0-9]+;')
burner=$(sum '^burner [0-9]+;')
echo "sleeps $sleeps early $early slept ${slept}s (the sleeper waited ${runqueue}s for a CPU) burner CPU ${burner_cpu}s;" \
  "sleeper samples $sleeper (blocked $blocked, through wait_outer;wait_inner $whole), burner $burner"
cat "$dir/stats"
[ "$early" -eq 0 ] || { echo "$early of $sleeps sleeps ended early: the sleeper was interrupted"; exit 1; }
# The JSON summary says the sampled seconds are wall time, not CPU time.
# (Into a file: grep -q would stop reading early, and pipefail would take
# the writer's SIGPIPE for a failure.)
"$profil" report --format json "$dir"/out/*.pb.gz > "$dir/json"
grep -q '"sampled_time":"wall"' "$dir/json" || { echo "the JSON summary does not say wall time"; head -c 600 "$dir/json"; exit 1; }
[ "$blocked" -ge 200 ] || { echo "too few blocked samples"; grep '^sleeper' "$dir/folded" | head; exit 1; }
awk -v n="$blocked" -v k="$whole" 'BEGIN { bound = 0.9 * n - 3 * sqrt(n * 0.9 * 0.1);
  if (k < bound) { printf "only %d of %d blocked samples through wait_outer;wait_inner (bound %.0f)\n", k, n, bound; exit 1 } }' \
  || { grep '^sleeper' "$dir/folded" | sort -t' ' -k2 | head; exit 1; }
awk -v b="$blocked" -v slept="$slept" -v hz=$hz 'BEGIN { e = slept * hz; tol = 4.5 * sqrt(e) + 0.05 * e + 20;
  if (b < e - tol || b > e + tol) { printf "blocked samples %d, expected %.0f +- %.0f\n", b, e, tol; exit 1 } }'
awk -v b="$blocked" -v n="$((sleeper + burner))" -v slept="$slept" -v life="$life" -v cpu="$burner_cpu" 'BEGIN {
  p = slept / (life + cpu); share = b / n; tol = 4.5 * sqrt(p * (1 - p) / n) + 0.02;
  if (share < p - tol || share > p + tol) { printf "blocked share %.3f, expected %.3f +- %.3f\n", share, p, tol; exit 1 } }'
echo ok
