#!/usr/bin/env bash
# profil run names a Ruby program's own methods (issue 34): run RUBY on
# tests/ruby_progs/shares.rb under profil run (at the sample by the BPF
# program as root, after the fact with --no-bpf: the way is checked), then
# check
# - the shares: three's part of three + one in the profile against the
#   split measured by timing each alone, within 4 binomial standard
#   deviations of the sampled count plus the error of reading the frames
#   after the sample (ERROR_ALLOWED, an absolute share: docs/ruby.md);
# - the merging: of the samples in keyed (called from a block that
#   Array#map, C, calls back), at least 99 % read <main> -> c_path -> (a
#   native frame) -> block in c_path -> keyed, root first;
# - rb_vm_exec left without Ruby frames in at most 1 % of the samples of
#   the merged view, those whose Ruby stack moved before it was read
#   (counted by a frame of their own) apart.
# Usage: run_ruby.sh PROFIL RUBY [profil run options...]
set -euo pipefail
profil=$1 ruby=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
. "$here/interp_checks.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/profil-ruby.XXXXXX")
trap 'rm -rf "$work"' EXIT
error_allowed=${ERROR_ALLOWED:-0.05}
version=$("$ruby" -e 'print RUBY_VERSION')
case "$version" in
  3.1.*) ;;
  *) echo "SKIP: $ruby is Ruby $version: profil reads Ruby 3.1's frames alone"; exit 77 ;;
esac

"$profil" run --hz 1000 -o "$work/out" "$@" -- "$ruby" "$here/ruby_progs/shares.rb" 2 > "$work/stdout" 2> "$work/stderr" || {
  echo "profil run failed:"; cat "$work/stderr"; exit 1; }
# From outside the run says how it read Ruby frames; inside (--inside: the
# handler reads them) the profile's Ruby frames below show it did.
case " $* " in
  *" --inside "*) ;;
  *) grep "Ruby frames in" "$work/stderr" || { echo "FAIL: the run did not say it read Ruby frames:"; cat "$work/stderr"; exit 1; } ;;
esac
# The way the frames were read, as asked: at the sample by BPF as root,
# after the fact with --no-bpf (interp_checks.sh).
read_way_checked Ruby "$work/stderr" "$@"
timed=$(awk '/^timed_three/ {print $2}' "$work/stdout")
[ -n "$timed" ] || { echo "the program printed no timing:"; cat "$work/stdout" "$work/stderr"; exit 1; }
profile=$(ls "$work"/out/*.pb.gz | head -1)

# Ruby frames alone, folded (root first): three's and one's samples.
"$profil" report --interpreter ruby --format folded "$profile" > "$work/ruby.folded"
shares_agree "$work/ruby.folded" "$timed" "$error_allowed"

# Merged, with objects: keyed's samples read <main> -> c_path -> native ->
# block in c_path -> keyed.
"$profil" report --format folded --folded-objects "$profile" > "$work/merged.folded"
awk '{ n = $NF; $NF = ""; sub(/ +$/, ""); k = split($0, f, ";"); keyed = 0
       for (i = 1; i <= k; ++i) if (f[i] == "[ruby]`keyed") keyed = i
       if (!keyed) next
       all += n; main = 0; cpath = 0; native = 0; block = 0
       for (i = 1; i < keyed; ++i) {
         if (f[i] == "[ruby]`<main>") main = i
         else if (f[i] == "[ruby]`c_path" && main) cpath = i
         else if (cpath && !block && f[i] !~ /^\[ruby\]`/) native = 1
         else if (f[i] == "[ruby]`block in c_path" && native) block = i
       }
       if (main && cpath && native && block == keyed - 1) ok += n }
     END { printf "merging: %d of %d samples in keyed in the program'"'"'s order\n", ok, all
           if (all < 20) { print "too few samples in keyed"; exit 1 }
           exit (ok >= 0.99 * all) ? 0 : 1 }' "$work/merged.folded" || {
  echo "FAIL: keyed out of order"; grep keyed "$work/merged.folded" | sort -k2 -nr | head -3; exit 1; }

# rb_vm_exec left without Ruby frames (the stacks that moved before they
# were read apart, bounded by MISFITS_ALLOWED as run_python.sh's).
loop_never_bare "$work/merged.folded" 'rb_vm_exec' "${MISFITS_ALLOWED:-0.5}"
echo "ok: $ruby"
