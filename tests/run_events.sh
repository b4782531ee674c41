#!/usr/bin/env bash
# Events from outside (issue 33): a program touching fresh pages in
# touch_pages has >= 90 % of its page-faults samples there, and one
# sleeping in sleeper (nanosleep in a loop) >= 90 % of its context-switches
# samples there, sleeper on the stack; each profile's sample type names
# its event (pprof "page-faults"/"count", read back by profil report's
# header). Every event is taken (period 1), so the share is a count; the
# bound is still 3 standard errors below the share, and the samples at
# least 1000, so that a loaded machine's extra switches in compute (each
# preemption is one) cannot pass as noise. Hardware events are skipped
# here when the machine has no counters, and said so.
# Usage: run_events.sh PROFIL PROGRAM
set -euo pipefail
profil=$1 program=$2
[ "$(id -u)" = 0 ] || [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -le 1 ] || {
  echo "skipped: context switches are counted in the kernel: root, CAP_PERFMON or perf_event_paranoid <= 1"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/profil-events.XXXXXX")
trap 'rm -rf "$work"' EXIT

# check NAME EVENT PERIOD FUNCTION: the profile of EVENT in $work/NAME
# names it and its period in the header, and has >= 90 % of its samples
# in FUNCTION (bound: three standard errors).
check() {
  local name=$1 event=$2 period=$3 function=$4 file
  file=$(ls "$work/$name"/*."$event".pb.gz) || { echo "FAIL: no $event profile in $name"; exit 1; }
  "$profil" report "$file" > "$work/$name.report"
  sed -n 1p "$work/$name.report" | grep -q " $event samples, one every $period" || {
    echo "FAIL: the header does not name $event every $period"; sed -n 1p "$work/$name.report"; exit 1; }
  "$profil" report --format folded "$file" > "$work/$name.folded"
  awk -v f="$function" -v e="$name" '{ n = $NF; total += n; if ($0 ~ ("(^|;)" f "($|;| )")) in_f += n }
    END { p = total ? in_f / total : 0; se = sqrt(p * (1 - p) / (total ? total : 1))
          printf "%s: %d of %d samples in %s (%.2f %%, bound %.2f %%)\n", e, in_f, total, f, 100 * p, 100 * (p - 3 * se)
          exit (total >= 1000 && p - 3 * se >= 0.90) ? 0 : 1 }' "$work/$name.folded" || {
    echo "FAIL"; sort -k2 -nr "$work/$name.folded" | head -5; exit 1; }
}
# share EVENT FUNCTION MODE: profil run of MODE, checked.
share() {
  "$profil" run --event "$1" -o "$work/$1" -- "$program" "$3" 2> "$work/$1.err" || { cat "$work/$1.err"; exit 1; }
  check "$1" "$1" 1 "$2"
}
share page-faults touch_pages faults
share context-switches sleeper switches

# attach --event to a running program, with a period: the program faults
# in touch_pages until it is killed (at most 300 s).
"$program" faults-forever &
target=$!
"$profil" attach --event page-faults --period 4 --duration 2s -o "$work/attach" "$target" 2> "$work/attach.err" || {
  kill "$target"; cat "$work/attach.err"; exit 1; }
kill "$target"
check attach page-faults 4 touch_pages

# The pprof file says what it counts: its sample and period types.
if command -v go > /dev/null; then
  # Into a file: grep -q would end the pipe early, and pipefail take go's
  # SIGPIPE for a failure (the time labels made the output long).
  go tool pprof -raw "$(ls "$work"/page-faults/*.pb.gz)" > "$work/raw.txt" 2> "$work/raw.err" || {
    echo "FAIL: go tool pprof does not read the file"; cat "$work/raw.err"; exit 1; }
  grep -q "page-faults/count" "$work/raw.txt" || {
    echo "FAIL: go tool pprof does not read page-faults/count"; exit 1; }
fi

# Several events: one profile each, side by side; CPU time keeps its name.
"$profil" run --event task-clock,minor-faults -o "$work/both" -- "$program" faults 2> "$work/both.err"
ls "$work"/both/run_events.*.minor-faults.pb.gz > /dev/null && ls "$work"/both/run_events.[0-9]*[0-9].pb.gz > /dev/null || {
  echo "FAIL: not one profile per event"; ls "$work/both"; exit 1; }

# Errors: one line each, non-zero.
for bad in "--event page-faults --hz 100" "--event page-faults --clock perf" "--inside --event page-faults" \
           "--event no-such-event"; do
  if "$profil" run $bad -- true 2> "$work/bad.err"; then echo "FAIL: accepted $bad"; exit 1; fi
  [ "$(wc -l < "$work/bad.err")" = 1 ] || { echo "FAIL: $bad:"; cat "$work/bad.err"; exit 1; }
done
for hw in cycles instructions cache-misses branch-misses; do
  if "$profil" run --event "$hw" -o "$work/$hw" -- "$program" faults 2> "$work/$hw.err"; then
    [ -n "$(ls "$work/$hw"/*."$hw".pb.gz)" ] || { echo "FAIL: no $hw profile"; exit 1; }
  else
    grep -q "'$hw'" "$work/$hw.err" && [ "$(wc -l < "$work/$hw.err")" = 1 ] || { echo "FAIL: $hw"; cat "$work/$hw.err"; exit 1; }
    echo "hardware event $hw skipped: this machine has no counter for it ($(cat "$work/$hw.err"))"
  fi
done
echo ok
