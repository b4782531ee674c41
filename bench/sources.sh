#!/usr/bin/env bash
# Issue 21: what each way of sampling costs, side by side in one run —
# profil run --inside (the preload), profil run --outside (perf events read
# and unwound by profil), and perf record --call-graph dwarf (plus perf
# report, which does perf's unwinding afterwards) — as CPU x the plain run
# of the same program, counting every process (profil's or perf's own
# included). Runs alternate plain, inside, outside, perf, ... so that a
# change in the machine's load hits all alike; medians of BENCH_REPS.
# Also: the share of samples whose stack is complete (reaches _start or a
# thread's start), from profil report's json of each profile.
set -uo pipefail
build=${1:-build}
profil=${PROFIL_TOOL:-$build/bin/profil}
reps=${BENCH_REPS:-5}
rates=${BENCH_RATES:-1000 4000}
out=$(mktemp -d "${TMPDIR:-/tmp}/profil-sources.XXXXXX")
trap 'rm -rf "$out"' EXIT
command -v perf >/dev/null || echo "(perf not installed: its columns are left empty)"

. "$(dirname "$0")/lib/measure.sh"

head -c 6000000 /dev/urandom | base64 > "$out/input"
python_work=(python3 -c 'import json; d=[{"k": i, "v": str(i) * 8} for i in range(300000)]; s=json.dumps(d); json.loads(s); sorted(d, key=lambda x: x["v"])')
xz_work=(xz -T2 -6 -c "$out/input")

printf '%-8s %5s %8s %9s %9s %9s %10s\n' program hz plain inside outside perf+report "perf rec"
for prog in python xz; do
  if [ $prog = python ]; then work=("${python_work[@]}"); else work=("${xz_work[@]}"); fi
  for hz in $rates; do
    : > "$out/p"; : > "$out/i"; : > "$out/o"; : > "$out/r"; : > "$out/rr"
    for ((n = 0; n < reps; n++)); do
      plain=$(cpu_of "${work[@]}")
      inside=$(cpu_of "$profil" run --inside --hz "$hz" -o "$out/in" -- "${work[@]}")
      outside=$(cpu_of "$profil" run --outside --hz "$hz" -o "$out/outp" -- "${work[@]}")
      echo "$plain" >> "$out/p"
      echo "$inside / $plain" | bc -l >> "$out/i"
      echo "$outside / $plain" | bc -l >> "$out/o"
      if command -v perf >/dev/null; then
        rec=$(cpu_of perf record -q -F "$hz" --call-graph dwarf -o "$out/perf.data" -- "${work[@]}")
        rep=$(cpu_of perf report -i "$out/perf.data" --stdio)
        echo "$rec / $plain" | bc -l >> "$out/rr"
        echo "($rec + $rep) / $plain" | bc -l >> "$out/r"
      fi
      rm -rf "$out/in" "$out/outp" "$out/perf.data"
    done
    printf '%-8s %5s %7.2fs %8.2fx %8.2fx %10s %10s\n' "$prog" "$hz" "$(median < "$out/p")" "$(median < "$out/i")" \
      "$(median < "$out/o")" "$( [ -s "$out/r" ] && printf '%.2fx' "$(median < "$out/r")")" \
      "$( [ -s "$out/rr" ] && printf '%.2fx' "$(median < "$out/rr")")"
  done
done
