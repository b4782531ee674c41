#!/usr/bin/env bash
# Symbolizing with inline frames against without them, and profil report
# against go tool pprof (issue 23's targets), on two stacked profiles:
#  - a large C++ binary with DWARF: profil itself (its RelWithDebInfo
#    build, some 55 MB of DWARF), profiled while it reports and merges; the
#    per-process profiles of that copy are merged into one;
#  - python3 (no DWARF of its own) with libc6-dbg's DWARF for libc.
# For each: `profil report` (text, by function) and `--format tree`, each
# with inline frames and with --no-inlines (pprof's -noinlines: no DWARF
# read), the same after `strip --strip-debug` of profil's copy (names
# only, the build id kept), and go tool pprof -top / -tree on the same
# file. The file carries every function's name (profil run writes them),
# so pprof is given -symbolize=none and reads the names from it: it does
# less than profil report, which symbolizes again from the binaries.
# pprof is its own binary (`go tool -n pprof`), without the go command.
# CPU is user + system of the whole command (/usr/bin/time); the hint's
# `dpkg -S` (0.26 s of CPU a run, for stripped libraries) is kept out by a
# PATH without dpkg, so the figures are the report's own.
#
#   bash bench/symbolize.sh BUILD
# BENCH_RUNS (default 5) runs of each command, alternating; the table
# gives the median, and the least and the most.
set -euo pipefail
# Debian's libdebuginfod-common sets DEBUGINFOD_URLS in login shells: the
# stripped copy would then be looked for on the network.
unset DEBUGINFOD_URLS
build=${1:-build}
runs=${BENCH_RUNS:-5}
profil_built=$(cd "$build/bin" && pwd)/profil
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== symbolize: inline frames vs --no-inlines vs names only, profil report vs go tool pprof, $runs runs each =="
if ! [ -x /usr/bin/time ]; then
  echo "skipped: /usr/bin/time is not installed (Debian: time)"
  exit 0
fi
pprof=""
command -v go > /dev/null && pprof=$(go tool -n pprof 2> /dev/null || true)
# A PATH with nothing on it (no dpkg; the commands are given by path).
mkdir -p "$work/path"

# The python3 profile (libc with libc6-dbg's DWARF when installed).
python=$(readlink -f /usr/bin/python3)
"$profil_built" run --hz 4000 -o "$work/py" -- "$python" -c '
import json
def leaf(n):
    return sum(i * i for i in range(n))
def middle(n):
    return [leaf(n) for _ in range(20)]
for k in range(300):
    middle(300 + k)
d = [{"a": i, "b": str(i)} for i in range(100000)]
for _ in range(3):
    json.loads(json.dumps(d))
sorted(str(i) for i in range(300000))
' > /dev/null 2> "$work/py.log" || { cat "$work/py.log"; exit 1; }
python_profile=$(ls -S "$work"/py/*.pb.gz | head -1)

# profil's copy at a path of its own (its build id stays the build's), at
# work: reports of the python3 profile summed 30 times, merges, a diff.
cp "$profil_built" "$work/profil"
for i in $(seq 1 30); do cp "$python_profile" "$work/in$i.pb.gz"; done
cat > "$work/work.sh" << EOF
cd "$work"
for i in 1 2 3; do
  ./profil report --format html in*.pb.gz > /dev/null
  ./profil report --by line --format tree in*.pb.gz > /dev/null
  ./profil report --format folded in*.pb.gz > /dev/null
  ./profil merge -o m.pb.gz in*.pb.gz
  ./profil diff "$python_profile" in1.pb.gz > /dev/null
done
EOF
"$profil_built" run --hz 4000 -o "$work/self" -- bash "$work/work.sh" > /dev/null 2> "$work/self.log" ||
  { cat "$work/self.log"; exit 1; }
"$profil_built" merge -o "$work/self.pb.gz" "$work"/self/profil.*.pb.gz 2> /dev/null

# Megabytes of an object's .debug_* sections (readelf -S -W: name, type,
# address, offset, size in hex).
dwarf_mb() {
  local total=0 size
  for size in $(readelf -S -W "$1" | sed -n 's/.*\] \.debug_[a-z_]* *[A-Z]* *[0-9a-f]* [0-9a-f]* \([0-9a-f]*\).*/\1/p'); do
    total=$((total + 16#$size))
  done
  echo $((total / 1000000))
}

# "cpu maxrss_kb" of one run.
measure() {
  env PATH="$work/path" /usr/bin/time -f '%U %S %M' -o "$work/time" "$@" > /dev/null 2> "$work/err" || {
    echo "failed: $*" >&2
    cat "$work/err" >&2
    return 1
  }
  tail -1 "$work/time" | awk '{ printf "%.3f %d\n", $1 + $2, $3 }'
}
# median, least and most of the numbers on standard input.
stats() { sort -n | awk '{ v[NR] = $1 } END { printf "%.2f (%.2f–%.2f)", v[int((NR + 1) / 2)], v[1], v[NR] }'; }

# Each labelled command run $runs times in turn (A B C A B C ...).
table() {
  local profile=$1
  shift
  local labels=() commands=()
  while [ $# -gt 0 ]; do
    labels+=("$1")
    commands+=("$2")
    shift 2
  done
  local n=${#labels[@]}
  for ((r = 0; r < runs; r++)); do
    for ((i = 0; i < n; i++)); do
      # shellcheck disable=SC2086
      measure ${commands[$i]} "$profile" >> "$work/m$i"
    done
  done
  printf '| %-44s | %-22s | %-14s |\n' command "CPU s, median (range)" "peak RSS MB"
  printf '|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..46})" "$(printf -- '-%.0s' {1..24})" "$(printf -- '-%.0s' {1..16})"
  for ((i = 0; i < n; i++)); do
    printf '| %-44s | %-22s | %-14s |\n' "${labels[$i]}" "$(cut -d' ' -f1 "$work/m$i" | stats)" \
      "$(cut -d' ' -f2 "$work/m$i" | awk '{ print $1 / 1024 }' | stats | cut -d' ' -f1)"
    rm -f "$work/m$i"
  done
}

# --symbolize force: every name, line and inline frame from the objects
# again (what is measured here); without it the views take what the file
# carries for the mappings profil run symbolized completely (pprof's rule),
# the last row.
report_rows=(
  "profil report --symbolize force" "$work/profil report --symbolize force"
  "... --no-inlines" "$work/profil report --symbolize force --no-inlines"
  "... --format tree" "$work/profil report --symbolize force --format tree"
  "... --format tree --no-inlines" "$work/profil report --symbolize force --format tree --no-inlines"
  "profil report (names from the file)" "$work/profil report"
)
pprof_rows=()
[ -n "$pprof" ] && pprof_rows=(
  "pprof -top -symbolize=none" "$pprof -top -symbolize=none"
  "pprof -tree -symbolize=none" "$pprof -tree -symbolize=none"
)

samples=$("$work/profil" report --format csv "$work/self.pb.gz" 2> /dev/null | awk -F, 'NR > 1 { s += $1 } END { print s }')
echo
echo "(a) profil's own stacked profile: $samples samples at 4 kHz, $(stat -c %s "$work/self.pb.gz") bytes;" \
  "profil's DWARF: $(dwarf_mb "$work/profil") MB"
table "$work/self.pb.gz" "${report_rows[@]}" "${pprof_rows[@]}"
strip --strip-debug "$work/profil"
echo
echo "the same with profil's DWARF stripped (names only; the build id kept):"
table "$work/self.pb.gz" "profil report" "$work/profil report" "profil report --format tree" "$work/profil report --format tree"

samples=$("$work/profil" report --format csv "$python_profile" 2> /dev/null | awk -F, 'NR > 1 { s += $1 } END { print s }')
echo
if dpkg -s libc6-dbg > /dev/null 2>&1; then
  echo "(b) python3: $samples samples at 4 kHz, libc named and inlined from libc6-dbg's DWARF"
else
  echo "(b) python3: $samples samples at 4 kHz (libc6-dbg is not installed: libc has names only)"
fi
table "$python_profile" "${report_rows[@]}" "${pprof_rows[@]}"
[ -n "$pprof" ] || echo "(go is not installed: no pprof rows)"
