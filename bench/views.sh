#!/usr/bin/env bash
# The report's views against their peers on the same recording (issue 22's
# target): profil report as text, --format tree and --format html (inline
# frames, the flame graph and every column in) against go tool pprof -top
# and -tree on the same pprof file, and perf report --children on perf's
# own dwarf recording of the same workload. CPU time (user + sys) of each
# command, BENCH_RUNS runs (default 5), the commands alternating within
# each run; the table gives the median and each peer's ratio to profil's.
# perf report runs once: it takes minutes on a dwarf recording. The text
# report is timed with --symbolize force too (every object read again, not
# the file's names): the default must never cost more (issue 30).
#
# Workloads: cc1 (gcc -O2 -c of a generated 500-function C file: deep
# compiler stacks, 4 kHz as the issue's 14k-sample profile) and node (a
# script of a few JavaScript functions with --perf-basic-prof, 4 kHz).
#
#   bash bench/views.sh BUILD
set -euo pipefail
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
runs=${BENCH_RUNS:-5}
hz=${BENCH_HZ:-4000}
profil=$(cd "$build/bin" && pwd)/profil
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== views: profil report vs go tool pprof and perf report, CPU s, median of $runs runs =="
for tool in /usr/bin/time go perf node gcc; do
  if ! command -v "$tool" > /dev/null; then
    echo "skipped: $tool is not installed (scripts/install-deps.sh installs the peers)"
    exit 0
  fi
done
export HOME=$work GOCACHE=$work/gocache PPROF_TMPDIR=$work/pprof

python3 "$(dirname "$0")/big_c.py" "$work/big.c"
cat > "$work/work.js" <<'JS'
// A few JavaScript functions of different weights, for about 2 s of CPU.
function parse(n) { let t = 0; for (let i = 0; i < n; i++) t += JSON.parse('{"a":' + i + ',"b":[1,2,3]}').a; return t; }
function mix(n) { let s = 0; for (let i = 0; i < n; i++) s = (s * 31 + (i ^ (s >>> 7))) | 0; return s; }
function words(n) { const m = new Map(); for (let i = 0; i < n; i++) { const w = 'w' + (i % 997); m.set(w, (m.get(w) || 0) + 1); } return m.size; }
function round() { return parse(2e4) + mix(2e6) + words(2e5); }
const start = process.cpuUsage();
let total = 0;
while (true) {
  total += round();
  const used = process.cpuUsage(start);
  if (used.user + used.system > 2.0e6) break;
}
console.log(total);
JS

workloads=(cc1 node)
command_of() {
  case $1 in
    cc1) echo "gcc -O2 -c $work/big.c -o $work/big.o" ;;
    node) echo "node --perf-basic-prof $work/work.js" ;;
  esac
}
cd "$work"  # node writes its isolate logs where it runs
for w in "${workloads[@]}"; do
  # shellcheck disable=SC2046
  "$profil" run --hz "$hz" -o "$work/$w.run" -- $(command_of "$w") > /dev/null 2> "$work/$w.run.log" ||
    { cat "$work/$w.run.log"; exit 1; }
  # The workload's own process: the largest profile (cc1, not gcc or as).
  cp "$(ls -S "$work/$w.run"/*.pb.gz | head -1)" "$work/$w.pb.gz"
  # shellcheck disable=SC2046
  perf record -q -F "$hz" --call-graph dwarf -o "$work/$w.perf.data" -- $(command_of "$w") > /dev/null 2>&1
done

. "$here/lib/measure.sh"
# CPU seconds (user + sys) of one command, its output thrown away; unlike
# measure.sh's cpu_of, a failing view ends the bench with its error.
cpu_or_fail() {
  /usr/bin/time -f '%U %S' -o "$work/time" "$@" > /dev/null 2> "$work/err" ||
    { echo "failed: $*" >&2; cat "$work/err" >&2; return 1; }
  awk '{ printf "%.3f\n", $1 + $2 }' "$work/time"
}

names=("profil report (text)" "profil report --format tree" "profil report --format html"
  "go tool pprof -top" "go tool pprof -tree" "perf report --children --stdio"
  "profil report --symbolize force (text)")
command_for() {  # index workload
  local p=$work/$2.pb.gz
  case $1 in
    0) echo "$profil report -o $work/out.txt $p" ;;
    1) echo "$profil report --format tree -o $work/out.txt $p" ;;
    2) echo "$profil report --format html -o $work/out.html $p" ;;
    3) echo "go tool pprof -top $p" ;;
    4) echo "go tool pprof -tree $p" ;;
    5) echo "perf report --children --stdio -i $work/$2.perf.data" ;;
    6) echo "$profil report --symbolize force -o $work/out.txt $p" ;;
  esac
}
for w in "${workloads[@]}"; do
  # Untimed, and first: it also makes the uncompressed copies of the debug
  # files the report reads (libc6-dbg's, in the fresh HOME above). The first
  # report of a HOME pays them, 40-50 ms of CPU on cc1, as much as the
  # report itself, whatever its options: timed, whichever command ran first
  # looked dearer (the default, in issue 30's "force is cheaper").
  samples=$("$profil" report --format csv "$work/$w.pb.gz" | awk -F, 'NR > 1 { s += $1 } END { print s }')
  printf '\n%s: %s samples in profil'"'"'s file at %s Hz; perf.data %s MB\n' "$w" "$samples" "$hz" \
    "$(($(stat -c %s "$work/$w.perf.data") / 1000000))"
  for i in "${!names[@]}"; do : > "$work/t.$w.$i"; done
  go tool pprof -top "$work/$w.pb.gz" > /dev/null 2>&1 || true  # go's first run builds its cache
  for ((r = 0; r < runs; ++r)); do
    for i in "${!names[@]}"; do
      [ "$i" = 5 ] && [ "$r" -gt 0 ] && continue
      # shellcheck disable=SC2046
      cpu_or_fail $(command_for "$i" "$w") >> "$work/t.$w.$i"
    done
  done
  printf '| command | CPU s | ratio to profil text | ratio to profil tree | ratio to profil html |\n|---|---|---|---|---|\n'
  for i in "${!names[@]}"; do
    m[$i]=$(median < "$work/t.$w.$i")
  done
  for i in "${!names[@]}"; do
    printf '| %s | %s | %.1f | %.1f | %.1f |\n' "${names[$i]}" "${m[$i]}" \
      "$(echo "${m[$i]} / ${m[0]}" | bc -l)" "$(echo "${m[$i]} / ${m[1]}" | bc -l)" "$(echo "${m[$i]} / ${m[2]}" | bc -l)"
  done
done
echo
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
