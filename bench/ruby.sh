#!/usr/bin/env bash
# Issue 34: what the Ruby frames cost. On tests/ruby_progs/shares.rb (the
# system's ruby, 3.1), profil's own CPU per sample from outside with the
# Ruby frames (read after the fact) and without them (--no-interpreter), at
# BENCH_RATES (1 and 4 kHz): the CPU of profil run (the program's and
# profil's) less the plain run's, per sample written; the target is the
# frames adding at most 20 % (the "+" column). Runs alternate plain, with,
# without, ...; medians of BENCH_REPS.
set -uo pipefail
build=${1:-build}
profil=${PROFIL_TOOL:-$build/bin/profil}
reps=${BENCH_REPS:-5}
rates=${BENCH_RATES:-1000 4000}
here=$(cd "$(dirname "$0")" && pwd)
ruby=${BENCH_RUBY:-$(command -v ruby)}
[ -n "$ruby" ] || { echo "ruby frames: no ruby here, skipped"; exit 0; }
out=$(mktemp -d "${TMPDIR:-/tmp}/profil-ruby-bench.XXXXXX")
trap 'rm -rf "$out"' EXIT
work=("$ruby" "$here/../tests/ruby_progs/shares.rb" 2)
. "$here/lib/measure.sh"

echo "ruby frames: $ruby, $reps runs each, alternating"
printf '%5s %8s %14s %14s %8s\n' hz plain "us/sample with" "us/sample w/o" "+"
for hz in $rates; do
  : > "$out/uw"; : > "$out/un"; : > "$out/p"
  for ((k = 0; k < reps; k++)); do
    plain=$(cpu_of "${work[@]}")
    with=$(cpu_of "$profil" run --hz "$hz" -o "$out/with" -- "${work[@]}")
    without=$(cpu_of "$profil" run --hz "$hz" --no-interpreter -o "$out/without" -- "${work[@]}")
    sw=$(samples_of "$out/with"); sn=$(samples_of "$out/without")
    echo "$plain" >> "$out/p"
    [ -n "$sw" ] && [ "$sw" -gt 0 ] && echo "($with - $plain) * 1000000 / $sw" | bc -l >> "$out/uw"
    [ -n "$sn" ] && [ "$sn" -gt 0 ] && echo "($without - $plain) * 1000000 / $sn" | bc -l >> "$out/un"
    rm -rf "$out/with" "$out/without"
  done
  uw=$(median < "$out/uw"); un=$(median < "$out/un")
  printf '%5s %7.2fs %14.1f %14.1f %7.0f%%\n' "$hz" "$(median < "$out/p")" "$uw" "$un" \
    "$(echo "($uw - $un) * 100 / $un" | bc -l)"
done
