#!/usr/bin/env bash
# Issue 32: many busy threads from outside. For each case (threads, Hz):
# threads_work.c's THREADS busy threads (they fill every core), and
#  - profil attach --duration 2s: seconds to the "attached" line (the events
#    are enabled then) and to its exit, samples, and the CPU it says was lost;
#  - profil run --outside of the same program for BENCH_RUN_S seconds: samples
#    against the program's own CPU time x the rate (losses not counted), and
#    "full" when profil said a ring was full; PROFIL_BEFORE's beside it;
#  - perf record -p --call-graph dwarf on the same program, beside it
#    (alternating with profil's attach): seconds to its exit and the share of
#    the CPU time its samples cover (perf's LOST records said by perf report);
#    and perf record -- of the launched program beside run --outside (per-task
#    events inherited by each thread, as profil's before issue 32's per-CPU
#    ones). perf record -B: perf 6.1's build-id pass aborts on this 6.18
#    kernel's data ("assertion failed at util/build-id.c"), writing nothing.
# BENCH_ATTACH=0 leaves profil's attach columns out, BENCH_PERF_P=0 perf record -p
# (both: no long-running busy program is started, only the runs).
# Times are taken by timed_lines.py, which runs before the busy threads
# (a shell's date(1) among them waits as long as what it times) and starts
# each command at the normal priority. PROFIL_BEFORE=path adds a column of
# that build's attach (before/after tables). Run as root for the raised
# reader; BENCH_CASES="1000:1000 10000:1000 2000:10000" by default.
set -uo pipefail
build=${1:-build}
profil=${PROFIL_TOOL:-$build/bin/profil}
before=${PROFIL_BEFORE:-}
cases=${BENCH_CASES:-1000:1000 10000:1000 2000:10000}
reps=${BENCH_REPS:-1}
with_attach=${BENCH_ATTACH:-1}
with_perf_p=${BENCH_PERF_P:-1}
run_s=${BENCH_RUN_S:-4}
here=$(dirname "$0")
timed=(python3 "$here/timed_lines.py")
out=$(mktemp -d "${TMPDIR:-/tmp}/profil-threads.XXXXXX")
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$out"' EXIT
cc -O2 -pthread -o "$out/work" "$here/threads_work.c" || exit 1
have_perf=1
command -v perf >/dev/null || { have_perf=0; echo "(perf not installed: its columns are left empty)"; }

# One attach: "to_attached to_exit samples lost_s" from timed_lines' lines.
attach_once() {  # tool pid hz
  "${timed[@]}" "$1" attach --duration 2s --hz "$3" -o "$out/a" "$2" > "$out/lines" 2>&1
  awk '/attached to/ { a = $1 } / samples \(/ { for (i = 1; i <= NF; i++) if ($(i + 1) == "samples") s = $i }
       /not sampled: ring buffer full/ { for (i = 1; i <= NF; i++) if ($(i + 1) == "s" && $(i + 2) == "of") l = $i }
       /^exit/ { e = $NF } END { printf "%s %s %s %s\n", a ? a : "-", e ? e : "-", s ? s : 0, l ? l : 0 }' "$out/lines"
  rm -rf "$out/a"
}
perf_once() {  # pid hz: "to_exit samples lost_records"
  "${timed[@]}" perf record -q -B -e task-clock -c $((1000000000 / $2)) --call-graph dwarf -p "$1" -o "$out/perf.data" \
    -- sleep 2 > "$out/lines" 2>&1
  local samples lost
  samples=$(perf report -i "$out/perf.data" --stats 2>/dev/null | awk '$1 == "SAMPLE" { print $3; exit }')
  lost=$(perf report -i "$out/perf.data" --stats 2>/dev/null | awk '$1 == "LOST" { print $3; exit }')
  echo "$(awk '/^exit/ { print $NF }' "$out/lines") ${samples:-0} ${lost:-0}"
  rm -f "$out/perf.data"
}

# One run --outside of THREADS busy threads: "samples / (cpu x hz) = share %",
# "full" added when a ring was said full.
run_once() {  # tool threads hz
  "${timed[@]}" "$1" run --outside --hz "$3" -o "$out/r" -- "$out/work" "$2" "$run_s" > "$out/lines" 2>&1
  awk -v hz="$3" '/^ *[0-9.]+ cpu / { cpu = $3 } / samples \(/ { for (i = 1; i <= NF; i++) if ($(i + 1) == "samples") s += $i }
                  /ring buffer full/ { full = " full" }
                  END { if (cpu > 0) printf "%d / (%.2f s x %d) = %.1f %%%s", s, cpu, hz, 100 * s / (cpu * hz), full }' "$out/lines"
  rm -rf "$out/r"
}
# perf record of the launched program: "samples / (cpu x hz) = share %, LOST n".
perf_run_once() {  # threads hz
  local cpu samples lost
  cpu=$(perf record -q -B -e task-clock -c $((1000000000 / $2)) --call-graph dwarf -o "$out/perf.data" \
    -- "$out/work" "$1" "$run_s" 2>/dev/null | awk '$1 == "cpu" { print $2 }')
  samples=$(perf report -i "$out/perf.data" --stats 2>/dev/null | awk '$1 == "SAMPLE" { print $3; exit }')
  lost=$(perf report -i "$out/perf.data" --stats 2>/dev/null | awk '$1 == "LOST" { print $3; exit }')
  awk -v s="${samples:-0}" -v cpu="${cpu:-0}" -v hz="$2" -v l="${lost:-0}" \
    'BEGIN { if (cpu > 0) printf "%d / (%.2f s x %d) = %.1f %%, LOST %d", s, cpu, hz, 100 * s / (cpu * hz), l }'
  rm -f "$out/perf.data"
}

printf '%-7s %6s | %-34s | %-34s | %-26s | %-32s | %-32s | %s\n' threads hz "attach: to attached, to exit, samples, lost s" \
  "before: the same" "perf record -p: exit, samples, LOST" "run --outside: samples/(cpu x hz)" "before: the same" \
  "perf record --: the same, LOST"
for c in $cases; do
  threads=${c%%:*} hz=${c##*:}
  for ((r = 0; r < reps; r++)); do
    # In a session of its own, as a server runs (its own autogroup, sched(7)):
    # in the bench's session its 1,000 threads shared one group with
    # profil's threads, which then waited seconds for each system call.
    now=- was=- rec=-
    if [ "$with_attach" = 1 ] || [ "$with_perf_p" = 1 ]; then
      setsid "$out/work" "$threads" 100000 > /dev/null 2>&1 &
      pid=$!
      # Every thread started (a busy program's threads start slowly among
      # themselves); gone before (killed, out of memory): said, not waited for.
      while [ "$(ls /proc/$pid/task 2>/dev/null | wc -l)" -lt "$threads" ] && kill -0 "$pid" 2>/dev/null; do sleep 1; done
      kill -0 "$pid" 2>/dev/null || echo "$threads threads: the busy program ended before they had all started" >&2
      [ "$with_attach" = 1 ] && now=$(attach_once "$profil" "$pid" "$hz")
      [ "$with_attach" = 1 ] && [ -n "$before" ] && was=$(attach_once "$before" "$pid" "$hz")
      [ "$have_perf" = 1 ] && [ "$with_perf_p" = 1 ] && rec=$(perf_once "$pid" "$hz")
      kill "$pid"; wait "$pid" 2>/dev/null
      echo "load average $(cut -d' ' -f1-3 /proc/loadavg) after the attaches of $threads threads at $hz Hz" >&2
    fi
    # Alternating: after, before, perf record.
    share=$(run_once "$profil" "$threads" "$hz")
    share_was=-; [ -n "$before" ] && share_was=$(run_once "$before" "$threads" "$hz")
    perf_share=-; [ "$have_perf" = 1 ] && perf_share=$(perf_run_once "$threads" "$hz")
    echo "load average $(cut -d' ' -f1-3 /proc/loadavg) after the runs of $threads threads at $hz Hz" >&2
    printf '%-7s %6s | %-34s | %-34s | %-26s | %-32s | %-32s | %s\n' "$threads" "$hz" "$now" "$was" "$rec" "$share" \
      "$share_was" "$perf_share"
  done
done
