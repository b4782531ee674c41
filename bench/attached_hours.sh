#!/usr/bin/env bash
# Issue 32: hours attached. profil attach --every EVERY to churn_server.c
# (threads and processes that start and end all the time) for DURATION,
# profil's resident memory (VmRSS) read every SAMPLE seconds; at the end:
# the RSS after the first interval, at the end, their ratio, and the
# windows written. The run is BENCH_EVERY=1m BENCH_DURATION=3600
# (RSS at the end within 10 % of the first minute's; 60 windows); the
# default is a shortened one: every 5 s for 3 minutes.
set -uo pipefail
build=${1:-build}
profil=${PROFIL_TOOL:-$build/bin/profil}
every=${BENCH_EVERY:-5s}
duration=${BENCH_DURATION:-180}
step=${BENCH_RSS_STEP:-5}
here=$(dirname "$0")
out=$(mktemp -d "${TMPDIR:-/tmp}/profil-hours.XXXXXX")
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$out"' EXIT
cc -O2 -pthread -o "$out/server" "$here/churn_server.c" || exit 1
"$out/server" $((duration + 60)) &
server=$!
"$profil" attach "$server" --every "$every" -o "$out/p" 2> "$out/err" &
profil_pid=$!
start=$(date +%s)
echo "seconds rss_kib windows"
while [ $(($(date +%s) - start)) -lt "$duration" ] && kill -0 "$profil_pid" 2>/dev/null; do
  sleep "$step"
  rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$profil_pid/status" 2>/dev/null)
  windows=$(ls "$out/p" 2>/dev/null | sed -n 's/.*\.s\([0-9]*\)\.pb\.gz$/\1/p' | sort -u | wc -l)
  echo "$(($(date +%s) - start)) ${rss:-?} $windows" | tee -a "$out/trace"
done
kill -INT "$profil_pid"; wait "$profil_pid"
kill "$server" 2>/dev/null; wait "$server" 2>/dev/null
# "After the first interval": the first reading once its window is written
# (its conversion is part of the steady state; a reading at 60 s, before the
# first window's file, measured the start-up alone).
awk 'NR == 1 { first = -1 } $3 >= 1 && first < 0 { first = $2 } { last = $2; w = $3 }
  END { printf "RSS after the first interval %d KiB, at the end %d KiB (%+.1f %%); %d windows written\n", first, last,
        100 * (last - first) / first, w }' "$out/trace"
# Every line profil said but the per-window sample counts: a loss or a
# throttle said at the end explains a window not written.
grep -v 'samples (' "$out/err"
