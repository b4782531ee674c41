#!/usr/bin/env bash
# What `profil run` costs per process, and what the preload runtime's
# checkpoints cost a long one (issue 12).
#
# Per process: a shell loop running /bin/true 200 and 600 times, plainly,
# under `profil run` (the perf ring with stacks, the default; the same with
# the rings mapped at start, PROFIL_RING_DEFER=0; without stacks; the cpu
# clock; perf-signal) and under `perf record` (when perf
# is there and may record); the slope (time of 600 - time of 200) / 400 is the wall time of
# one more short process, the shell's own fork and exec included, so the
# start of each tool cancels out. Runs alternate (plain, profil, perf, ...)
# so that a change in the machine's load hits every side alike; medians of
# the repetitions.
#
# Checkpoints: a running process writes its dump every max(50 ms, 1/32 of
# its CPU time) (runtime/preload_dump.cc); the CPU time (user+sys) of a ~2.5 s
# CPU-bound program under `profil run` with them on, and off
# (PROFIL_CHECKPOINTS=0), alternating.
set -euo pipefail
build=${1:-build}
profil=${PROFIL_TOOL:-$build/bin/profil}
work=$build/bin/run_overhead_work
reps=${BENCH_RUN_REPS:-5}
steps=${BENCH_CHECKPOINT_STEPS:-1000}  # millions of steps: ~2.5 s of CPU
out=$(mktemp -d "${TMPDIR:-/tmp}/profil-bench.XXXXXX")
trap 'rm -rf "$out"' EXIT

# The loop also times itself (ns into $2): the wall time of the program
# alone, without the tool's start and end. perf record's own wall time
# does not move with the loop's (it ends ~1 s after its workload whatever
# that did), so its slope is only readable from inside.
cat >"$out/loop.sh" <<'LOOP'
n=$1; i=0; start=$(date +%s%N)
while [ "$i" -lt "$n" ]; do /bin/true; i=$((i + 1)); done
echo $(($(date +%s%N) - start)) >"$2"
LOOP

# "wall cpu inner" of one command, in seconds (bash's time: children
# included; inner: the loop's own clock).
measure() {
  local TIMEFORMAT='%R %U %S'
  rm -f "$out/inner"
  local outer
  outer=$({ time "$@" >/dev/null 2>&1; } 2>&1 | awk '{ printf "%.4f %.4f", $1, $2 + $3 }')
  echo "$outer $(echo "$(cat "$out/inner" 2>/dev/null || echo 0) / 1000000000" | bc -l)"
}
. "$(dirname "$0")/lib/measure.sh"
# "wall cpu inner" ms per process of one way to run the loop (a function
# taking the count, then the way's options): its slope from 200 to 600.
slope() {
  local way=$1 w200 c200 i200 w600 c600 i600
  shift
  read -r w200 c200 i200 < <(measure "$way" 200 "$@")
  read -r w600 c600 i600 < <(measure "$way" 600 "$@")
  echo "$(echo "($w600 - $w200) * 1000 / 400" | bc -l) $(echo "($c600 - $c200) * 1000 / 400" | bc -l)" \
    "$(echo "($i600 - $i200) * 1000 / 400" | bc -l)"
}
# "wall cpu inner" medians of a file of such lines.
medians() {
  echo "$(cut -d' ' -f1 <"$1" | median) $(cut -d' ' -f2 <"$1" | median) $(cut -d' ' -f3 <"$1" | median)"
}
plain_loop() { sh "$out/loop.sh" "$1" "$out/inner"; }
profil_loop() {
  local n=$1
  shift
  rm -rf "$out/p"
  "$profil" run "$@" -o "$out/p" -- sh "$out/loop.sh" "$n" "$out/inner"
}
perf_loop() { perf record -q -o "$out/perf.data" -- sh "$out/loop.sh" "$1" "$out/inner"; }
have_perf=0
if command -v perf >/dev/null && perf record -q -o "$out/perf.data" -- /bin/true >/dev/null 2>&1; then have_perf=1; fi

echo "== profil run: cost per short process (sh loop of 200 vs 600 /bin/true, median of $reps alternating runs) =="
: >"$out/plain"; : >"$out/profil"; : >"$out/atstart"; : >"$out/flat"; : >"$out/cpu"; : >"$out/signal"; : >"$out/perf"
# The rings mapped at start, as before they were deferred (perf_ring.cc).
profil_loop_rings_at_start() { PROFIL_RING_DEFER=0 profil_loop "$@"; }
for ((i = 0; i < reps; i++)); do
  slope plain_loop >>"$out/plain"
  slope profil_loop >>"$out/profil"
  slope profil_loop_rings_at_start >>"$out/atstart"
  slope profil_loop --no-stacks >>"$out/flat"
  slope profil_loop --clock cpu >>"$out/cpu"
  slope profil_loop --clock perf-signal >>"$out/signal"
  [ "$have_perf" = 1 ] && slope perf_loop >>"$out/perf"
done
read -r plain plain_cpu plain_inner < <(medians "$out/plain")
read -r run run_cpu run_inner < <(medians "$out/profil")
read -r flat flat_cpu flat_inner < <(medians "$out/flat")
# The wall time is what the target is set on (inner: the program's own;
# wall: with the tool's work after it); the CPU time (user+sys of every
# process) moves less with the machine's load.
line() {
  printf '%-12s %8.3f %+8.3f %8.3f %+8.3f %8.3f %+8.3f\n' "$1" "$2" "$(echo "$2 - $plain" | bc -l)" "$3" \
    "$(echo "$3 - $plain_cpu" | bc -l)" "$4" "$(echo "$4 - $plain_inner" | bc -l)"
}
printf '%-12s %8s %8s %8s %8s %8s %8s\n' "ms/process" wall added cpu added inner added
line plain "$plain" "$plain_cpu" "$plain_inner"
line "profil run" "$run" "$run_cpu" "$run_inner"  # stacks, the default
read -r clock clock_cpu clock_inner < <(medians "$out/atstart")
line "rings@start" "$clock" "$clock_cpu" "$clock_inner"  # PROFIL_RING_DEFER=0
line "--no-stacks" "$flat" "$flat_cpu" "$flat_inner"
read -r clock clock_cpu clock_inner < <(medians "$out/cpu")
line "--clock cpu" "$clock" "$clock_cpu" "$clock_inner"
read -r clock clock_cpu clock_inner < <(medians "$out/signal")
line "perf-signal" "$clock" "$clock_cpu" "$clock_inner"
if [ "$have_perf" = 1 ]; then
  read -r record record_cpu record_inner < <(medians "$out/perf")
  line "perf record" "$record" "$record_cpu" "$record_inner"
else
  echo "perf record: not available"
fi

echo "== profil run: cost of the checkpoints (${steps}M steps, CPU time, median of $reps alternating runs) =="
: >"$out/on"; : >"$out/off"
for ((i = 0; i < reps; i++)); do
  rm -rf "$out/p"
  read -r _ on _ < <(measure "$profil" run -o "$out/p" -- "$work" "$steps")
  rm -rf "$out/p"
  read -r _ off _ < <(measure env PROFIL_CHECKPOINTS=0 "$profil" run -o "$out/p" -- "$work" "$steps")
  echo "$on" >>"$out/on"; echo "$off" >>"$out/off"
done
on=$(median <"$out/on")
off=$(median <"$out/off")
printf 'checkpoints: cpu %.3fs with, %.3fs without: %+.1f ms (%+.2f %%)\n' "$on" "$off" \
  "$(echo "($on - $off) * 1000" | bc -l)" "$(echo "($on - $off) * 100 / $off" | bc -l)"
