#!/usr/bin/env bash
# Profiling does not change a Ruby program (issue 34: ruby crashed under
# profil before): tests/ruby_progs/status.rb run 20 times under profil run
# gives, every time, the stdout, stderr and exit status (3) it gives alone
# (as root the frames are read at the sample by BPF: how many runs were,
# said).
# Usage: run_ruby_unchanged.sh PROFIL RUBY [profil run options...]
set -euo pipefail
profil=$1 ruby=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/profil-ruby-unchanged.XXXXXX")
trap 'rm -rf "$work"' EXIT
program=$here/ruby_progs/status.rb

set +e
"$ruby" "$program" > "$work/want.out" 2> "$work/want.err"
want=$?
set -e
[ "$want" = 3 ] || { echo "the program alone exited $want, not 3"; cat "$work/want.err"; exit 1; }
runs=20 same=0 at_sample=0
for i in $(seq "$runs"); do
  set +e
  "$profil" run --hz 1000 "$@" -o "$work/out$i" -- "$ruby" "$program" > "$work/got.out" 2> "$work/got.err"
  got=$?
  set -e
  # Which way the frames were read (as root, at the sample by BPF): said.
  grep -q "Ruby frames in .* read at the sample by BPF" "$work/got.err" && at_sample=$((at_sample + 1))
  # profil's own lines on stderr start "profil:"; the program's are the rest.
  grep -v '^profil:' "$work/got.err" > "$work/got.program.err" || true
  if [ "$got" = "$want" ] && cmp -s "$work/got.out" "$work/want.out" && cmp -s "$work/got.program.err" "$work/want.err"; then
    same=$((same + 1))
  else
    echo "run $i: exit $got (alone $want)"; diff "$work/want.out" "$work/got.out" | head -5; diff "$work/want.err" "$work/got.program.err" | head -5
  fi
  [ -n "$(ls "$work/out$i"/*.pb.gz 2>/dev/null)" ] || { echo "run $i wrote no profile"; cat "$work/got.err"; exit 1; }
  rm -rf "$work/out$i"
done
echo "unchanged: $same of $runs runs (Ruby frames read at the sample by BPF in $at_sample of them)"
[ "$same" = "$runs" ]
