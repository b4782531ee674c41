#!/usr/bin/env bash
# At the sample, or not (issue 34): RUBY runs tests/ruby_progs/moving.rb,
# whose Ruby stack changes depth (its rb_vm_exec frames' count) every few
# microseconds, under profil run both ways (interp_checks.sh's
# moving_checked: read at the sample by BPF, at most 1 % did not fit).
# With --inside: once, the frames read by the handler in the program, at
# most 1 % of the samples with Ruby frames did not fit.
# Usage: run_ruby_moving.sh PROFIL RUBY [--inside]
set -euo pipefail
profil=$1 ruby=$2
here=$(cd "$(dirname "$0")" && pwd)
. "$here/interp_checks.sh"
case "$("$ruby" -e 'print RUBY_VERSION')" in
  3.1.*) ;;
  *) echo "SKIP: profil reads Ruby 3.1's frames alone"; exit 77 ;;
esac
work=$(mktemp -d "${TMPDIR:-/tmp}/profil-ruby-moving.XXXXXX")
trap 'rm -rf "$work"' EXIT
if [ "${3:-}" = --inside ]; then
  "$profil" run --inside --hz 1000 -o "$work/out" -- "$ruby" "$here/ruby_progs/moving.rb" 2 > /dev/null 2> "$work/stderr" || {
    echo "profil run failed:"; cat "$work/stderr"; exit 1; }
  "$profil" report --format folded "$(ls "$work"/out/*.pb.gz | head -1)" > "$work/merged.folded"
  awk '{ n = $NF
         if ($0 ~ /\[ruby: the stack moved before it was read\]/) misfit += n
         else if ($0 ~ /\[ruby: a call entered or left\]/) between += n
         else if ($0 ~ /(^|;)down(;| |$)/) ruby += n }
       END { total = misfit + between + ruby
             printf "inside: %d samples in down, %d did not fit (%.2f %%), %d in a call entered or left\n",
                    total, misfit, total ? 100 * misfit / total : 0, between
             if (total < 500) { print "too few samples with Ruby frames"; exit 1 }
             exit (misfit <= 0.01 * total) ? 0 : 1 }' "$work/merged.folded" || {
    echo "FAIL: more Ruby stacks than 1 % did not fit"; exit 1; }
  exit 0
fi
moving_checked Ruby "$profil" "$work" "$ruby" "$here/ruby_progs/moving.rb" 2
