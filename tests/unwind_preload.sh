#!/usr/bin/env bash
# PROFIL_STACKS=1 through the preload (as profil run sets it): an ordinary
# program's samples get whole stacks, nearly all complete; without it, no
# stack table at all. Usage: unwind_preload.sh LIBPROFIL WORKLOAD
set -euo pipefail
lib=$1 workload=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
PROFIL_RUN_DIR=$dir PROFIL_HZ=1000 PROFIL_STACKS=1 PROFIL_STACKS_STATS=$dir/stats LD_PRELOAD=$lib "$workload" 0.5
cat "$dir/stats"
# "unwind_workload: complete C truncated T (at the depth limit L) distinct D frames F dropped X"
read -r _ _ complete _ truncated _ _ _ _ _ _ distinct _ frames _ dropped < "$dir/stats"
[ "$complete" -ge 20 ] || { echo "too few complete stacks: $complete"; exit 1; }
[ $((truncated * 20)) -le "$complete" ] || { echo "more than 5 % truncated: $truncated of $((complete + truncated))"; exit 1; }
[ "$dropped" -eq 0 ] || { echo "dropped $dropped"; exit 1; }
[ "$distinct" -ge 3 ] || { echo "only $distinct distinct stacks"; exit 1; }
PROFIL_RUN_DIR=$dir PROFIL_HZ=1000 PROFIL_STACKS_STATS=$dir/stats.off LD_PRELOAD=$lib "$workload" 0.1
[ ! -e "$dir/stats.off" ] || { echo "a stack table without PROFIL_STACKS"; exit 1; }
PROFIL_RUN_DIR=$dir PROFIL_HZ=1000 PROFIL_STACKS=maybe PROFIL_STACKS_STATS=$dir/stats.bad LD_PRELOAD=$lib "$workload" 0.1 \
  2> "$dir/err"
grep -q "PROFIL_STACKS: 'maybe'" "$dir/err" || { echo "no warning for a bad PROFIL_STACKS"; exit 1; }
echo ok
