#!/usr/bin/env bash
# Kernel frames from outside (issue 33): a program that spends its time in
# read(2) of /dev/zero, run under profil run as root, has the kernel's
# functions (named from /proc/kallsyms, object [kernel.kallsyms]) under the
# user stack that made the call in most samples, innermost last; with
# --no-kernel, one [kernel] frame and no kernel function.
# Usage: run_kernel_frames.sh PROFIL PROGRAM
set -euo pipefail
profil=$1 program=$2
[ "$(id -u)" = 0 ] || { echo "skipped: kernel call chains need root or CAP_PERFMON"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/profil-kernel.XXXXXX")
trap 'rm -rf "$work"' EXIT

"$profil" run --hz 1000 -o "$work/with" -- "$program" 1 2> "$work/with.err" || { cat "$work/with.err"; exit 1; }
"$profil" report --format folded --folded-objects "$work"/with/*.pb.gz > "$work/with.folded"
awk '{ n = $NF; $NF = ""; sub(/ +$/, ""); total += n; k = split($0, f, ";")
       first = 0; for (i = 1; i <= k; ++i) if (f[i] ~ /^\[kernel\.kallsyms\]`/) { first = i; break }
       if (!first) next
       kernel += n
       # user frames above (root side), read_loop among them; none inside.
       ok = 1; loop = 0
       for (i = 1; i < first; ++i) if (f[i] ~ /`read_loop$/) loop = 1
       for (i = first; i <= k; ++i) if (f[i] !~ /^\[kernel\.kallsyms\]`/) ok = 0
       if (ok && loop) ordered += n }
     END { printf "kernel frames in %d of %d samples, under read_loop in order: %d\n", kernel, total, ordered
           exit (total >= 200 && kernel >= 0.5 * total && ordered >= 0.99 * kernel) ? 0 : 1 }' "$work/with.folded" || {
  echo "FAIL"; sort -k2 -nr "$work/with.folded" | head -5; exit 1; }
grep -q "read_zero\|__arch_copy_to_user\|clear_user\|iov_iter_zero" "$work/with.folded" || {
  echo "FAIL: no function of /dev/zero's read named"; sort -k2 -nr "$work/with.folded" | head -5; exit 1; }

"$profil" run --hz 1000 --no-kernel -o "$work/without" -- "$program" 1 2> "$work/without.err" || { cat "$work/without.err"; exit 1; }
"$profil" report --format folded --folded-objects "$work"/without/*.pb.gz > "$work/without.folded"
if grep -q "kernel.kallsyms" "$work/without.folded"; then echo "FAIL: --no-kernel kept kernel functions"; exit 1; fi
grep -q '\[kernel\]' "$work/without.folded" || { echo "FAIL: --no-kernel lost the [kernel] frame"; exit 1; }
echo ok
