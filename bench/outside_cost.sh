#!/usr/bin/env bash
# Issue 32: profil's own CPU per sample from outside (the reader's reading
# and unwinding, what starves among many busy threads), against perf record
# without stacks on the same program: xz -T1 under profil run --outside
# (whole stacks) and under perf record -e task-clock (flat), at BENCH_RATES
# (100 and 4000 Hz), runs alternating plain, profil, perf, ...; the extra
# CPU (user+sys of every process, profil's and perf's own included) is the
# median over BENCH_REPS; µs per sample = its slope from the lowest to the
# highest rate over the samples added (xz's CPU time x the rates' difference).
# The second table: the tools' own CPU (the run's less xz's, which a shell
# inside the run times), the same slope. PROFIL_BEFORE=path adds that
# build's profil as a row of both tables, its runs alternating with the
# others' (before/after in one run).
set -euo pipefail
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
profil=${PROFIL_TOOL:-$build/bin/profil}
before=${PROFIL_BEFORE:-}
reps=${BENCH_REPS:-5}
rates=${BENCH_RATES:-100 4000}
out=$(mktemp -d "${TMPDIR:-/tmp}/profil-outside-cost.XXXXXX")
trap 'rm -rf "$out"' EXIT
have_perf=1
command -v perf >/dev/null && perf record -q -e task-clock -o "$out/probe.data" -- true >/dev/null 2>&1 || {
  have_perf=0; echo "(perf record is not available: its column is left empty)"; }
head -c 4000000 /dev/urandom | base64 > "$out/input"
work=(xz -T1 -6 -c "$out/input")
. "$here/lib/measure.sh"
# The program timed by a shell inside the tool's run: the tool's own CPU is
# the run's less the program's (the issue's measure: profil's reader, not
# the kernel's sampling in the program's context).
timed=(bash -c 'TIMEFORMAT="%U %S"; { time "$@" >/dev/null 2>&1; } 2>"$0"' "$out/program" "${work[@]}")
tool_run() {  # NAME HZ COMMAND...: its CPU in NAME.HZ, its own in NAME-own.HZ
  local name=$1 hz=$2 total
  shift 2
  rm -f "$out/program"
  total=$(cpu_of "$@")
  # A run that never started the program (perf record 6.1 here aborts now
  # and then: "stack smashing detected") counts in neither table.
  [ -s "$out/program" ] || return 0
  echo "$total" >> "$out/$name.$hz"
  echo "$total - $(awk '{ print $1 + $2 }' "$out/program")" | bc -l >> "$out/$name-own.$hz"
}
for hz in $rates; do
  for ((i = 0; i < reps; i++)); do
    cpu_of "${work[@]}" >> "$out/plain"
    tool_run profil "$hz" "$profil" run --outside --hz "$hz" -o "$out/p" -- "${timed[@]}"
    rm -rf "$out/p"
    if [ -n "$before" ]; then
      tool_run before "$hz" "$before" run --outside --hz "$hz" -o "$out/p" -- "${timed[@]}"
      rm -rf "$out/p"
    fi
    if [ "$have_perf" = 1 ]; then
      tool_run perf "$hz" perf record -q -e task-clock -c $((1000000000 / hz)) -o "$out/perf.data" -- "${timed[@]}"
      rm -f "$out/perf.data"
    fi
  done
done
label() {
  case $1 in before) echo "(before) profil --outside" ;; perf) echo "perf record (no stacks)" ;; *) echo "profil run --outside" ;; esac
}
plain=$(median < "$out/plain")
low=${rates%% *} high=${rates##* }
printf '%-28s' "extra CPU (s)"; for hz in $rates; do printf ' %9s' "@$hz"; done; printf ' %12s\n' "us/sample"
for tool in before profil perf; do
  [ -s "$out/$tool.$low" ] || continue
  printf '%-28s' "$(label "$tool")"
  for hz in $rates; do printf ' %9.3f' "$(echo "$(median < "$out/$tool.$hz") - $plain" | bc -l)"; done
  printf ' %12.1f\n' "$(echo "($(median < "$out/$tool.$high") - $(median < "$out/$tool.$low")) / ($plain * ($high - $low)) * 1000000" | bc -l)"
done
printf '%-28s' "the tool's own CPU (s)"; for hz in $rates; do printf ' %9s' "@$hz"; done; printf ' %12s\n' "us/sample"
for tool in before profil perf; do
  [ -s "$out/$tool-own.$low" ] || continue
  printf '%-28s' "$(label "$tool")"
  for hz in $rates; do printf ' %9.3f' "$(median < "$out/$tool-own.$hz")"; done
  printf ' %12.1f\n' "$(echo "($(median < "$out/$tool-own.$high") - $(median < "$out/$tool-own.$low")) / ($plain * ($high - $low)) * 1000000" | bc -l)"
done
echo "(xz -T1 alone: $plain s of CPU, median of $reps)"
