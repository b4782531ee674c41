#!/usr/bin/env bash
# Overhead of `profil run` on a CPU-bound program (run_overhead_work: a fixed
# amount of work) at 100, 250, 500, 1000 and 4000 Hz on the cpu and perf clocks, as a
# ratio to the same program run plainly. Runs alternate (plain, profiled,
# plain, profiled...) so a change in machine load hits both sides alike;
# each ratio is profiled / the plain run next to it, and the median of the
# repetitions is reported. Wall: elapsed time of the whole `profil run`
# (start, sampling, dumps, conversion to pprof and gmon.out). CPU: user+sys
# of every process of the run.
set -euo pipefail
build=${1:-build}
profil=${PROFIL_TOOL:-$build/bin/profil}
work=$build/bin/run_overhead_work
steps=${BENCH_RUN_STEPS:-600}      # millions of steps: ~1.4 s of CPU
reps=${BENCH_RUN_REPS:-5}
out=$(mktemp -d "${TMPDIR:-/tmp}/profil-bench.XXXXXX")
trap 'rm -rf "$out"' EXIT

# "wall cpu" of one command, in seconds (bash's time: children included).
measure() {
  local TIMEFORMAT='%R %U %S'
  { time "$@" >/dev/null 2>&1; } 2>&1 | awk '{ printf "%.4f %.4f\n", $1, $2 + $3 }'
}
. "$(dirname "$0")/lib/measure.sh"

echo "== profil run: overhead on a CPU-bound program (${steps}M steps, median of $reps alternating runs) =="
# The fixed part first: starting a preloaded process, its dump, the
# conversion — what a program that does nothing pays.
: >"$out/fixed"
for ((i = 0; i < reps; i++)); do
  read -r pw _ < <(measure /bin/true)
  read -r rw _ < <(measure "$profil" run -o "$out" -- /bin/true)
  echo "($rw - $pw) * 1000" | bc -l >>"$out/fixed"
done
printf 'fixed cost of profil run (wall, /bin/true): %.0f ms\n' "$(median <"$out/fixed")"
printf '%-6s %6s %12s %12s %10s %10s\n' clock hz "plain wall" "run wall" "wall x" "cpu x"
for clock in cpu perf; do
  for hz in ${BENCH_RUN_RATES:-100 250 500 1000 4000}; do
    : >"$out/wall" ; : >"$out/cpu"; : >"$out/plain"; : >"$out/run"
    for ((i = 0; i < reps; i++)); do
      read -r pw pc < <(measure "$work" "$steps")
      rm -f "$out"/*.pb.gz "$out"/gmon.*
      read -r rw rc < <(measure "$profil" run -o "$out" --hz "$hz" --clock "$clock" -- "$work" "$steps")
      echo "$pw" >>"$out/plain"; echo "$rw" >>"$out/run"
      echo "$rw / $pw" | bc -l >>"$out/wall"
      echo "$rc / $pc" | bc -l >>"$out/cpu"
    done
    printf '%-6s %6s %11.3fs %11.3fs %9.3fx %9.3fx\n' "$clock" "$hz" "$(median <"$out/plain")" \
      "$(median <"$out/run")" "$(median <"$out/wall")" "$(median <"$out/cpu")"
  done
done
