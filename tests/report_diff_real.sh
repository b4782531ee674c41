#!/usr/bin/env bash
# profil diff on two real profiles of one program, the second with hot_outer
# made slower (its own loop given ~0.3 s of work): hot_outer must be named
# first, with a significant z. The work is counted in iterations (CPU time),
# so a loaded machine only makes it take longer. With ~250 and ~450 samples
# hot_outer's share moves from ~0 % to ~45 %: z is about 12, far from the
# 3 asked for.
set -euo pipefail
profil=$1 program=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/base" "$work/new"
"$profil" run -o "$work/base" -- "$program" burn 3000 0 2>/dev/null
"$profil" run -o "$work/new" -- "$program" burn 3000 300000 2>/dev/null
"$profil" diff --format csv "$work"/base/*.pb.gz "$work"/new/*.pb.gz > "$work/diff.csv"
cat "$work/diff.csv"
first=$(sed -n 2p "$work/diff.csv")
function=${first%%,*}
# Columns by their header's names: the diff CSV gains columns at its end.
column() { awk -F, -v name="$1" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) c = i } NR == 2 { print $c }' "$work/diff.csv"; }
z=$(column z)
significant=$(column significant)
[ "$function" = hot_outer ] || { echo "FAIL: first row is $function, not hot_outer" >&2; exit 1; }
awk -v z="$z" 'BEGIN { exit !(z > 3) }' || { echo "FAIL: z = $z, not significant" >&2; exit 1; }
[ "$significant" = 1 ] || { echo "FAIL: hot_outer's change is not marked significant" >&2; exit 1; }
echo "hot_outer first, z = $z"
