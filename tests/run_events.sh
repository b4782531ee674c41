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

# share EVENT FUNCTION MODE: runs, checks the header and the share.
share() {
  local event=$1 function=$2 mode=$3
  "$profil" run --event "$event" -o "$work/$event" -- "$program" "$mode" 2> "$work/$event.err" || { cat "$work/$event.err"; exit 1; }
  local file
  file=$(ls "$work/$event"/*."$event".pb.gz)
  "$profil" report "$file" > "$work/$event.report"
  sed -n 1p "$work/$event.report" | grep -q " $event samples, one every 1" || {
    echo "FAIL: the header does not name $event"; sed -n 1p "$work/$event.report"; exit 1; }
  "$profil" report --format folded "$file" > "$work/$event.folded"
  awk -v f="$function" -v e="$event" '{ n = $NF; total += n; if ($0 ~ ("(^|;)" f "($|;| )")) in_f += n }
    END { p = total ? in_f / total : 0; se = sqrt(p * (1 - p) / (total ? total : 1))
          printf "%s: %d of %d samples in %s (%.2f %%, bound %.2f %%)\n", e, in_f, total, f, 100 * p, 100 * (p - 3 * se)
          exit (total >= 1000 && p - 3 * se >= 0.90) ? 0 : 1 }' "$work/$event.folded" || {
    echo "FAIL"; sort -k2 -nr "$work/$event.folded" | head -5; exit 1; }
}
share page-faults touch_pages faults
share context-switches sleeper switches

# The pprof file says what it counts: its sample and period types.
if command -v go > /dev/null; then
  go tool pprof -raw "$(ls "$work"/page-faults/*.pb.gz)" 2> /dev/null | grep -q "page-faults/count" || {
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
