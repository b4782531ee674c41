#!/usr/bin/env bash
# A program with an alternate signal stack of its own under --inside
# --clock perf-signal: CPython 3.6 and 3.7 (faulthandler registers one of
# 13.5 KiB at start). A signal nested in a handler whose work ran on
# profil's handler stack went to the top of the program's stack, over the
# interrupted handler: 4 of 30 such runs died of SIGSEGV before the fix
# (handler_stack.cc), 0 of 40 after; RUNS runs here (20: a 13 % rate is
# missed in 6 % of the test's runs) must all exit as the plain run does.
# Usage: run_python_altstack.sh PROFIL PYTHON
set -uo pipefail
profil=$1 python=$2
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/profil-altstack.XXXXXX")
trap 'rm -rf "$work"' EXIT
runs=${RUNS:-20}
for ((i = 1; i <= runs; ++i)); do
  "$profil" run --inside --clock perf-signal --hz 4000 -o "$work/out$i" -- "$python" "$here/python_progs/gil.py" 0.2 \
    > "$work/stdout" 2> "$work/stderr"
  status=$?
  [ "$status" = 0 ] || { echo "FAIL: run $i of $runs exited $status:"; cat "$work/stderr"; exit 1; }
  rm -rf "$work/out$i"
done
echo "ok: $runs runs of $python exited 0"
