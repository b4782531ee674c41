#!/usr/bin/env bash
# Issue 21: what attaching costs a running server-like program
# (attach_server.c: an epoll loop and two busy workers), measured as its
# throughput: 5 s before, 5 s attached (profil attach, or perf record -p
# --call-graph dwarf, at the same rate), 5 s after detaching. Rates are
# the medians of the program's half-second counts in each stretch.
set -uo pipefail
. "$(dirname "$0")/lib/measure.sh"  # median
build=${1:-build}
profil=${PROFIL_TOOL:-$build/bin/profil}
hz=${BENCH_HZ:-1000}
out=$(mktemp -d "${TMPDIR:-/tmp}/profil-attach.XXXXXX")
trap 'rm -rf "$out"' EXIT
cc -O2 -pthread -o "$out/server" "$(dirname "$0")/attach_server.c" || exit 1

measure() {  # $1: label; the attaching command follows, with PID replaced
  local label=$1; shift
  "$out/server" 16 > "$out/rates" &
  local server=$!
  sleep 5.5
  local cmd=("${@//PID/$server}")
  "${cmd[@]}" > /dev/null 2>&1 &
  local attacher=$!
  sleep 5
  kill -INT $attacher 2> /dev/null
  wait $attacher 2> /dev/null
  wait $server
  local before during after
  before=$(awk '$1 == "rate" && $3 > 1 && $3 <= 5.5 { print $2 }' "$out/rates" | median)
  during=$(awk '$1 == "rate" && $3 > 6 && $3 <= 10.5 { print $2 }' "$out/rates" | median)
  after=$(awk '$1 == "rate" && $3 > 11.5 { print $2 }' "$out/rates" | median)
  printf '%-28s before %9.0f  attached %9.0f (%+5.1f %%)  after %9.0f (%+5.1f %%)\n' "$label" "$before" "$during" \
    "$(echo "100 * ($during - $before) / $before" | bc -l)" "$after" "$(echo "100 * ($after - $before) / $before" | bc -l)"
}
measure "profil attach ($hz Hz)" "$profil" attach PID --hz "$hz" -o "$out/p"
command -v perf > /dev/null && measure "perf record -p -g dwarf" perf record -q -F "$hz" --call-graph dwarf -p PID -o "$out/perf.data"
