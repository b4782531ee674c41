#!/usr/bin/env bash
# JIT code named from its perf-PID.map (issue 23, report/jit_map.h): node
# --perf-basic-prof on a script whose CPU is mostly in one JavaScript
# function, hotLoop (three times warmLoop's work: jit_progs/hot.js, shared
# with run_jit_ask_node.sh). The run names it in its pprof file; the map is copied
# into the output directory, so a profile written without names
# (--no-symbolize) is named from the copy when reported later, /tmp's map
# gone. hotLoop must hold the majority of the samples (perf, on the same
# script, puts ~71 % in JS:*hotLoop; the rest is warmLoop, node's start-up
# and its compiler threads).
# Usage: run_jit_node.sh PROFIL [RUN OPTION...] (--inside, --outside)
set -euo pipefail
profil=$1
shift
command -v node > /dev/null || { echo "no node (nodejs, scripts/install-deps.sh)"; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cp "$(dirname "$0")/jit_progs/hot.js" "$dir/hot.js"
# share FILE: "<hotLoop samples> <all samples>" of a report in CSV.
share() {
  "$profil" report --format csv "$1" > "$dir/csv"
  awk -F, 'NR > 1 { n += $1; if ($0 ~ /hotLoop/) h += $1 } END { print h + 0, n + 0 }' "$dir/csv"
}
check() {  # what, hot, all
  echo "$1: hotLoop $2 of $3 samples"
  [ "$3" -ge 200 ] || { echo "too few samples"; cat "$dir/csv"; exit 1; }
  [ $(($2 * 2)) -gt "$3" ] || { echo "hotLoop does not hold the majority"; head -5 "$dir/csv"; exit 1; }
}

"$profil" run "$@" --hz 1000 -o "$dir/named" -- node --perf-basic-prof "$dir/hot.js" > /dev/null 2> "$dir/err" ||
  { cat "$dir/err"; exit 1; }
pid=$(ls "$dir/named" | sed -n 's/^perf-\([0-9]*\)\.map$/\1/p' | head -1)
[ -n "$pid" ] || { echo "no perf-PID.map kept in the output directory:"; ls "$dir/named"; exit 1; }
read -r hot all < <(share "$dir/named/node.$pid.pb.gz")
check "named by the run" "$hot" "$all"
grep -q '\[jit\]' "$dir/csv" || { echo "the JIT's code is not the object [jit]"; head -5 "$dir/csv"; exit 1; }
rm -f "/tmp/perf-$pid.map"

"$profil" run "$@" --no-symbolize --hz 1000 -o "$dir/later" -- node --perf-basic-prof "$dir/hot.js" > /dev/null 2> "$dir/err" ||
  { cat "$dir/err"; exit 1; }
pid=$(ls "$dir/later" | sed -n 's/^perf-\([0-9]*\)\.map$/\1/p' | head -1)
[ -n "$pid" ] || { echo "no perf-PID.map kept with --no-symbolize"; ls "$dir/later"; exit 1; }
rm -f "/tmp/perf-$pid.map"
read -r hot all < <(share "$dir/later/node.$pid.pb.gz")
check "named at the report from the kept map" "$hot" "$all"
