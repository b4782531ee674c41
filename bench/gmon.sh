#!/usr/bin/env bash
# The gmon runtime against glibc's, on a -pg program that only makes calls
# (gmon_bench: leaf() called CALLS times by each of 1 or 2 threads):
#   - the CPU time of a call, plain (no -pg), -pg with glibc's gmon and -pg
#     with libprofil's; the instrumented ones minus plain is what mcount
#     costs a call, reported with libprofil's / glibc's as a ratio;
#   - the calls gprof then shows for leaf against the calls made (glibc's
#     mcount drops the arcs of a thread that finds another inside it).
# Runs alternate (plain, glibc, profil, plain, ...) so a change in machine
# load hits all three alike; medians of the repetitions.
set -euo pipefail
build=${1:-build}
bin=$build/bin
calls=${BENCH_GMON_CALLS:-20000000}
reps=${BENCH_GMON_REPS:-5}
out=$(mktemp -d "${TMPDIR:-/tmp}/profil-bench-gmon.XXXXXX")
trap 'rm -rf "$out"' EXIT
command -v gprof >/dev/null || { echo "gmon.sh: gprof not found (binutils)" >&2; exit 1; }

. "$(dirname "$0")/lib/measure.sh"
# The calls column of leaf's line in gprof's flat profile.
leaf_calls() { gprof -b -p "$1" "$2" | awk '$NF == "leaf" { print $4; found = 1 } END { if (!found) print 0 }'; }

echo "== gmon runtime: cost of mcount per call and calls counted, libprofil vs glibc ($calls calls per thread, median of $reps) =="
printf '%-8s %9s %9s %9s %12s %12s %8s %14s %14s\n' threads plain glibc profil "glibc mcount" "profil mcount" ratio \
  "glibc counted" "profil counted"
for threads in 1 2; do
  for v in plain glibc profil; do : >"$out/$v.ns"; : >"$out/$v.counted"; done
  for ((i = 0; i < reps; i++)); do
    for v in plain glibc profil; do
      dir=$out/$v.$i
      mkdir -p "$dir"
      (cd "$dir" && "$OLDPWD/$bin/gmon_bench_$v" "$calls" "$threads") >>"$out/$v.ns"
      if [ "$v" != plain ]; then leaf_calls "$bin/gmon_bench_$v" "$dir/gmon.out" >>"$out/$v.counted"; fi
    done
  done
  plain=$(median <"$out/plain.ns") glibc=$(median <"$out/glibc.ns") profil=$(median <"$out/profil.ns")
  glibc_cost=$(echo "$glibc - $plain" | bc -l) profil_cost=$(echo "$profil - $plain" | bc -l)
  made=$((calls * threads))
  printf '%-8s %8.2fns %8.2fns %8.2fns %11.2fns %11.2fns %7.2fx %13.1f%% %13.1f%%\n' "$threads" "$plain" "$glibc" "$profil" \
    "$glibc_cost" "$profil_cost" "$(echo "$profil_cost / $glibc_cost" | bc -l)" \
    "$(echo "100 * $(median <"$out/glibc.counted") / $made" | bc -l)" \
    "$(echo "100 * $(median <"$out/profil.counted") / $made" | bc -l)"
done
echo "(ratio: libprofil's mcount cost / glibc's; counted: calls gprof shows for leaf / calls made)"
