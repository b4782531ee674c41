#!/usr/bin/env bash
# The perf clocks side by side with `perf record` (issue 12):
#  1. cost per sample: the extra CPU time (user+sys of every process of the
#     run) of a CPU-bound program (run_overhead_work) under profil run
#     --no-stacks --no-symbolize (flat samples, against perf record's flat
#     ones; symbols, like perf report's, are another cost) on
#     the cpu clock, the perf clock (ring buffer), the perf-signal clock,
#     and under `perf record -e task-clock:u` at the same period, at 100,
#     1000 and 4000 Hz; µs per sample = the slope of the extra CPU from
#     100 to 4000 Hz over the samples added; CPU ratios = profiled / plain.
#  2. xz -9 -T2 (its worker threads block every signal): the share of xz's
#     CPU time (its rusage, measured by the shell that ran it) that ends up
#     in samples, on the perf clock (flat and with stacks), perf-signal,
#     cpu and perf record.
# Runs alternate (plain, cpu, perf, perf-signal, perf record, plain...) so
# a change in machine load hits every side alike; medians of the
# repetitions.
set -euo pipefail
build=${1:-build}
profil=${PROFIL_TOOL:-$build/bin/profil}
work=$build/bin/run_overhead_work
steps=${BENCH_PERF_STEPS:-600}   # millions of steps: ~1.4 s of CPU
reps=${BENCH_PERF_REPS:-5}
rates=${BENCH_PERF_RATES:-100 1000 4000}
xz_mb=${BENCH_XZ_MB:-20}
xz_reps=${BENCH_XZ_REPS:-$reps}
out=$(mktemp -d "${TMPDIR:-/tmp}/profil-bench.XXXXXX")
trap 'rm -rf "$out"' EXIT

have_perf=1
if ! command -v perf >/dev/null || ! perf record -q -e task-clock:u -o "$out/probe.data" -- true >/dev/null 2>&1; then
  have_perf=0
  echo "(perf record is not available: linux-perf, kernel.perf_event_paranoid)"
fi

# "wall cpu" of one command, in seconds (bash's time: children included).
measure() {
  local TIMEFORMAT='%R %U %S'
  { time "$@" >/dev/null 2>&1; } 2>&1 | awk '{ printf "%.4f %.4f\n", $1, $2 + $3 }'
}
. "$(dirname "$0")/lib/measure.sh"

tools="cpu perf perf-signal"
[ "$have_perf" = 1 ] && tools="$tools record"
profiled() {  # tool hz command...
  local tool=$1 hz=$2
  shift 2
  rm -f "$out"/*.pb.gz "$out"/*.data
  if [ "$tool" = record ]; then
    measure perf record -q -e task-clock:u -c $((1000000000 / hz)) -o "$out/perf.data" -- "$@"
  else
    # --no-symbolize: perf record leaves symbols to perf report, and
    # profil run's symbolizing is a cost per object, not per sample, that
    # a run pays only if a sample lands there (libc's detached debug
    # info, libc6-dbg, compressed: ~45 ms to inflate, in the 4000 Hz runs
    # and seldom at 100 Hz, which doubled the slope measured).
    measure "$profil" run --no-stacks --no-symbolize -o "$out" --hz "$hz" --clock "$tool" -- "$@"
  fi
}

echo "== perf clocks vs perf record: cost per sample (${steps}M steps of run_overhead_work, median of $reps alternating runs) =="
for hz in $rates; do
  for ((i = 0; i < reps; i++)); do
    read -r _ pc < <(measure "$work" "$steps")
    echo "$pc" >>"$out/plain.$hz"
    for tool in $tools; do
      read -r _ tc < <(profiled "$tool" "$hz" "$work" "$steps")
      echo "$tc" >>"$out/cpu.$tool.$hz"
      echo "$tc / $pc" | bc -l >>"$out/ratio.$tool.$hz"
    done
  done
done
low=${rates%% *}
high=${rates##* }
plain=$(cat "$out"/plain.* | median)
printf '%-12s' clock
for hz in $rates; do printf ' %9s' "x@$hz"; done
printf ' %12s\n' "us/sample"
for tool in $tools; do
  name=$tool
  [ "$tool" = record ] && name="perf record"
  printf '%-12s' "$name"
  for hz in $rates; do printf ' %8.3fx' "$(median <"$out/ratio.$tool.$hz")"; done
  # The slope: extra CPU per extra sample between the lowest and highest
  # rate (samples = the program's CPU time x the rate), from the profiled
  # runs' own medians: the plain runs' noise need not enter it.
  slope=$(echo "($(median <"$out/cpu.$tool.$high") - $(median <"$out/cpu.$tool.$low")) / ($plain * ($high - $low)) * 1000000" | bc -l)
  printf ' %12.1f\n' "$slope"
done
echo "(plain run: $plain s of CPU)"
echo

[ "$xz_reps" -gt 0 ] || exit 0  # BENCH_XZ_REPS=0: the cost per sample alone
echo "== xz -9 -T2 on ${xz_mb} MB: share of xz's CPU time in samples (1000 Hz, median of $xz_reps runs) =="
input=$out/xz.in
# Text of random words: compressible, not trivially.
awk -v mb="$xz_mb" 'BEGIN { srand(1); for (i = 0; i < 5000; ++i) { w = ""; n = 2 + int(rand() * 8);
    for (j = 0; j < n; ++j) w = w sprintf("%c", 97 + int(rand() * 26)); words[i] = w }
  total = 0; while (total < mb * 1048576) { line = ""; for (k = 0; k < 12; ++k) line = line words[int(rand() * 5000)] " ";
    print line; total += length(line) + 1 } }' >"$input"
# xz's own CPU time: `times` in the shell that ran it (children's user, sys).
# (A builtin in a pipeline runs in a subshell, which has no children:
# through a file.)
xz_script="xz -9 -T2 -c '$input' >/dev/null; times >'$out/times'; tail -1 '$out/times' | sed 's/[ms]/ /g' | awk '{ print \$1 * 60 + \$2 + \$3 * 60 + \$4 }'"
# perf+stacks: the ring with whole stacks (profil run's default), the
# others flat.
xz_tools=${BENCH_XZ_CLOCKS:-perf perf+stacks perf-signal cpu record}
[ "$have_perf" = 1 ] || xz_tools=${xz_tools/record/}
for ((i = 0; i < xz_reps; i++)); do
  for tool in $xz_tools; do
    rm -f "$out"/*.pb.gz "$out"/*.data
    if [ "$tool" = record ]; then
      cpu=$(perf record -q -e task-clock:u -c 1000000 -o "$out/perf.data" -- sh -c "$xz_script" 2>/dev/null)
      samples=$(perf script -i "$out/perf.data" --comm xz -F comm 2>/dev/null | wc -l)
      sampled=$(echo "$samples / 1000" | bc -l)
    elif [ "$tool" = perf+stacks ]; then
      cpu=$(PROFIL_RUN_DIR= "$profil" run -v -o "$out" --hz 1000 --clock perf -- sh -c "$xz_script" 2>"$out/err")
      sampled=$(grep -o 'xz (pid [0-9]*): [0-9]* samples ([0-9.]* s' "$out/err" | awk -F'(' '{ s += $3 } END { print s + 0 }')
    else
      cpu=$(PROFIL_RUN_DIR= "$profil" run --no-stacks -v -o "$out" --hz 1000 --clock "$tool" -- sh -c "$xz_script" 2>"$out/err")
      sampled=$(grep -o 'xz (pid [0-9]*): [0-9]* samples ([0-9.]* s' "$out/err" | awk -F'(' '{ s += $3 } END { print s + 0 }')
    fi
    echo "$sampled / $cpu * 100" | bc -l >>"$out/xz.$tool"
  done
done
printf '%-12s %10s\n' clock "in samples"
for tool in $xz_tools; do
  name=$tool
  [ "$tool" = record ] && name="perf record"
  printf '%-12s %9.1f%%\n' "$name" "$(median <"$out/xz.$tool")"
done
