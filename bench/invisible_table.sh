#!/usr/bin/env bash
# Issue 20's table: each case of tests/run_progs/run_invisible.c (and a few
# real programs) run N times under `profil run` on every clock, compared
# with its plain run: a run counts as identical when its exit status is the
# plain one and its stdout is too, the figures that vary from run to run
# (seconds slept, CPU, jumps, waits) left out. Prints one row per case,
# "identical/N" per clock. Usage: bench/invisible_table.sh [BUILD] [N]
set -uo pipefail
build=${1:-build}
n=${2:-20}
profil=$build/bin/profil
prog=$build/bin/run_invisible
out=$(mktemp -d "${TMPDIR:-/tmp}/profil-invisible.XXXXXX")
trap 'rm -rf "$out"' EXIT
clocks=(auto perf perf-signal cpu wall)
# name|command (run by sh -c; $P is the program, $D a scratch directory)
cases=(
  "sleep beside a busy thread|\$P sleep"
  "pause() with no handler|\$P pause"
  "EINTR stress, 8 workers|\$P eintr 8"
  "siglongjmp from SIGALRM every 1 ms|\$P longjmp"
  "8 KiB sigaltstack threads|\$P altstack 8192"
  "SIGKILLs its 20 children|\$P killer"
  "dup2 of its directory over 500-1023|\$P dupdir \$D/own && test -z \"\$(ls -A \$D/own)\""
  "ulimit -Sn 16|ulimit -Sn 16; \$P nofile"
  "seccomp kills perf_event_open|\$P seccomp perf"
  "seccomp kills timer_create|\$P seccomp timer"
  "strace -f -o /dev/null /bin/true|strace -f -o /dev/null /bin/true"
  "timeout 0.3 (busy loop)|timeout 0.3 sh -c 'while :; do :; done'"
  "ruby, two threads|ruby -e 'h={}; t=Thread.new{100000.times{|i| h[i.to_s]=i}}; a=(1..200000).map{|i| i*7919%100003}.sort; t.join; p h.size, a[999]'"
  "gdb -batch running a program|timeout 60 gdb -batch -ex run --args \$P burn 0.1 2>&1 | grep -c 'exited normally'"
)
normalize() { sed -E 's/(slept|cpu|jumps|waits|process_cpu|user) [0-9.]+/\1 X/g'; }
one() {  # command dir -> "status<TAB>stdout"
  local d=$2; rm -rf "$d"; mkdir -p "$d/own"
  P=$prog D=$d bash -c "$1" >"$d.out" 2>/dev/null; local st=$?
  printf '%s\t%s' "$st" "$(normalize <"$d.out")"
}
printf '%-38s' "case"; for c in "${clocks[@]}"; do printf ' %11s' "$c"; done; echo
for entry in "${cases[@]}"; do
  name=${entry%%|*}; cmd=${entry#*|}
  if [[ $cmd == ruby* ]] && ! command -v ruby >/dev/null; then continue; fi
  if [[ $cmd == strace* ]] && ! command -v strace >/dev/null; then continue; fi
  if [[ $cmd == *gdb* ]] && ! command -v gdb >/dev/null; then continue; fi
  plain=$(one "$cmd" "$out/plain")
  printf '%-38s' "$name"
  for c in "${clocks[@]}"; do
    same=0
    for ((i = 0; i < n; i++)); do
      got=$(one "$profil run -o $out/o-$c-$i --clock $c -- bash -c $(printf '%q' "$cmd")" "$out/run")
      # profil run -- bash -c: the case's own shell words, as above
      [ "$got" = "$plain" ] && same=$((same + 1))
      rm -rf "$out/o-$c-$i"
    done
    printf ' %8s/%-2s' "$same" "$n"
  done
  echo
done
