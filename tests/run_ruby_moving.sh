#!/usr/bin/env bash
# At the sample, or not (issue 34): RUBY runs tests/ruby_progs/moving.rb,
# whose Ruby stack changes depth (its rb_vm_exec frames' count) every few
# microseconds, under profil run both ways (interp_checks.sh's
# moving_checked: read at the sample by BPF, at most 1 % did not fit).
# Usage: run_ruby_moving.sh PROFIL RUBY
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
moving_checked Ruby "$profil" "$work" "$ruby" "$here/ruby_progs/moving.rb" 2
