#!/usr/bin/env bash
# The BPF program that reads interpreter frames at the sample is loaded at
# the first interpreter process found, not at every run (issue 31's cost:
# loading it and its maps took ~9.5 ms of profil's CPU a run, a program
# without Python too). Checked with strace's count of the perf_event BPF
# programs loaded:
# - a shell loop (no interpreter profil reads): none loaded;
# - PYTHON started by that shell, not exec'd (its events inherited from
#   the shell's, opened before the program was known): one loaded, and
#   most of the frames still read at the sample by it.
# Needs root (the program loads as root here and in CI) and strace; else
# skipped (77).
# Usage: run_bpf_lazy.sh PROFIL PYTHON
set -euo pipefail
profil=$1 python=$2
here=$(cd "$(dirname "$0")" && pwd)
[ "$(id -u)" = 0 ] || { echo "SKIP: the BPF program loads as root only"; exit 77; }
command -v strace > /dev/null || { echo "SKIP: no strace"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/profil-bpf-lazy.XXXXXX")
trap 'rm -rf "$work"' EXIT

loads() {  # LABEL PROGRAM...: the perf_event programs profil run loaded
  local label=$1
  shift
  strace -f -qq -e trace=bpf -o "$work/$label.strace" \
    "$profil" run --hz 1000 -o "$work/$label.out" -- "$@" > /dev/null 2> "$work/$label.stderr" || {
    echo "profil run failed ($label):"; cat "$work/$label.stderr"; exit 1; }
  grep -c 'BPF_PROG_LOAD.*BPF_PROG_TYPE_PERF_EVENT.*= [0-9]' "$work/$label.strace" || true
}

n=$(loads shell sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i + 1)); done')
echo "a shell loop: $n perf_event BPF program(s) loaded"
[ "$n" = 0 ] || { echo "FAIL: a run without an interpreter loaded the BPF program"; grep BPF_PROG_LOAD "$work/shell.strace"; exit 1; }

n=$(loads python sh -c "\"$python\" \"$here/python_progs/shares.py\" 1; true")
echo "python under a shell: $n perf_event BPF program(s) loaded"
[ "$n" = 1 ] || { echo "FAIL: the BPF program was loaded $n times for one Python process"; cat "$work/python.stderr"; exit 1; }
line=$(grep "Python frames in .* read at the sample by BPF" "$work/python.stderr") || {
  echo "FAIL: the frames were not read at the sample:"; cat "$work/python.stderr"; exit 1; }
echo "$line"
# Most at the sample: those before the program was loaded and the thread's
# first (read after the fact) are a start-up's few.
read -r total at_sample < <(sed -E 's/.*Python frames in ([0-9]+) samples: ([0-9]+) read at the sample.*/\1 \2/' <<< "$line")
awk -v t="$total" -v a="$at_sample" 'BEGIN { exit !(t >= 200 && a >= 0.9 * t) }' || {
  echo "FAIL: $at_sample of $total samples read at the sample (90 % wanted)"; exit 1; }
