#!/usr/bin/env bash
# Whole stacks (src/unwind/, issue 13): on real Debian programs, the share
# of samples whose stack unwinds to the outermost frame (_start, a thread's
# start), the CPU cost of unwinding in the handler against flat sampling and
# perf record --call-graph dwarf, and the instructions a sample costs
# (callgrind). Uses the preload's test-only PROFIL_STACKS_STATS line.
set -euo pipefail
build=${1:-build}
lib=$(cd "$build/lib" && pwd)/libprofil.so
hz=${BENCH_HZ:-1000}
runs=${BENCH_RUNS:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Inputs: incompressible data for xz, shuffled numbers for sort, a
# generated C file for cc1 (recursive calls, switches: deep compiler stacks).
head -c 6000000 /dev/urandom > "$work/data.bin"
seq 1 1500000 | shuf > "$work/nums.txt"
python3 "$(dirname "$0")/big_c.py" "$work/big.c"
cat > "$work/work.py" <<'PY'
import json
d = [{'a': i, 'b': str(i) * 3} for i in range(700000)]
s = json.dumps(d); json.loads(s); sorted(d, key=lambda x: x['b'])
PY
python=$(readlink -f "$(command -v python3)")
case "$python" in *pyenv*) python=/usr/bin/python3 ;; esac

programs=(python3 xz sort cc1)
command_of() {
  case $1 in
    python3) echo "$python $work/work.py" ;;
    xz) echo "xz -T1 -6 -c $work/data.bin" ;;
    sort) echo "sort -n $work/nums.txt" ;;
    cc1) echo "gcc -O2 -c $work/big.c -o $work/big.o" ;;
  esac
}

echo "== unwind: stacks that reach the outermost frame (${hz} Hz, PROFIL_STACKS=1) =="
printf '%-10s %9s %9s %9s %11s %9s %8s\n' program ticks complete truncated "at limit" frames dropped
for p in "${programs[@]}"; do
  mkdir -p "$work/run"
  rm -f "$work/stats"
  # shellcheck disable=SC2046
  PROFIL_HZ=$hz PROFIL_RUN_DIR="$work/run" PROFIL_STACKS=1 PROFIL_STACKS_STATS="$work/stats" LD_PRELOAD=$lib \
    $(command_of "$p") > /dev/null
  # The program itself (gcc: its cc1), not the drivers it runs.
  line=$(grep -E "^(python3[.0-9]*|xz|sort|cc1): " "$work/stats" | sort -t' ' -k3 -n | tail -1)
  set -- $line
  complete=$3 truncated=$5 at_limit=${10%)} frames=${14} dropped=${16}
  ticks=$((complete + truncated))
  printf '%-10s %9d %8.1f%% %8.1f%% %10.1f%% %9.1f %8d\n' "$p" "$ticks" \
    "$(echo "100 * $complete / $ticks" | bc -l)" "$(echo "100 * $truncated / $ticks" | bc -l)" \
    "$(echo "100 * $at_limit / $ticks" | bc -l)" "$(echo "$frames / $ticks" | bc -l)" "$dropped"
done
echo "(complete: unwound to a frame whose return address is undefined or 0; at limit: truncated at 128 frames)"

echo
echo "== unwind: CPU time, ${runs} alternating runs each (user+sys s, median) =="
measure() { # mode program -> seconds
  local mode=$1 p=$2
  mkdir -p "$work/run"
  # shellcheck disable=SC2046
  case $mode in
    none) /usr/bin/time -f '%U %S' -o "$work/t" $(command_of "$p") > /dev/null ;;
    flat) PROFIL_HZ=$hz PROFIL_RUN_DIR="$work/run" LD_PRELOAD=$lib /usr/bin/time -f '%U %S' -o "$work/t" $(command_of "$p") > /dev/null ;;
    stacks) PROFIL_HZ=$hz PROFIL_RUN_DIR="$work/run" PROFIL_STACKS=1 LD_PRELOAD=$lib /usr/bin/time -f '%U %S' -o "$work/t" $(command_of "$p") > /dev/null ;;
    perf) /usr/bin/time -f '%U %S' -o "$work/t" perf record -q -F "$hz" --call-graph dwarf -o "$work/perf.data" $(command_of "$p") > /dev/null 2>&1 ;;
  esac
  awk '{ print $1 + $2 }' "$work/t"
}
. "$(dirname "$0")/lib/measure.sh"
modes=(none flat stacks)
if command -v perf >/dev/null && perf record -q -o "$work/probe" true 2>/dev/null; then modes+=(perf); fi
printf '%-10s' program; for m in "${modes[@]}"; do printf ' %9s' "$m"; done; printf ' %12s %12s\n' "stacks/flat" "perf/none"
for p in "${programs[@]}"; do
  declare -A samples=()
  for ((r = 0; r < runs; ++r)); do
    for m in "${modes[@]}"; do samples[$m]+="$(measure "$m" "$p") "; done
  done
  printf '%-10s' "$p"
  declare -A med=()
  for m in "${modes[@]}"; do
    med[$m]=$(echo "${samples[$m]}" | tr ' ' '\n' | grep . | median)
    printf ' %9.2f' "${med[$m]}"
  done
  printf ' %11.3fx' "$(echo "${med[stacks]} / ${med[flat]}" | bc -l)"
  if [ -n "${med[perf]:-}" ]; then printf ' %11.3fx' "$(echo "${med[perf]} / ${med[none]}" | bc -l)"; fi
  printf '\n'
  unset samples med
done
echo "(perf: perf record --call-graph dwarf -F $hz, its own CPU included; perf's time counts the kernel's copies)"

if command -v valgrind >/dev/null; then
  echo
  echo "== unwind: instructions per sample in the handler (callgrind, python3, cpu clock) =="
  for stacks in 0 1; do
    mkdir -p "$work/run"
    LD_BIND_NOW=1 PROFIL_CLOCK=cpu PROFIL_HZ=1000 PROFIL_RUN_DIR="$work/run" PROFIL_STACKS=$stacks \
      PROFIL_STACKS_STATS="$work/cgstats" LD_PRELOAD=$lib valgrind --tool=callgrind \
      --callgrind-out-file="$work/cg.$stacks" "$python" -c "
import json
d = [{'a': i, 'b': str(i) * 3} for i in range(20000)]
s = json.dumps(d); json.loads(s); sorted(d, key=lambda x: x['b'])" 2>/dev/null
  done
  # deliver() is the flat sample (every sink); deliver_stack() the unwind and the table's add.
  inclusive() { callgrind_annotate --inclusive=yes --threshold=100 "$1" 2>/dev/null |
    grep -E "$2" | grep -v '^ *\.' | head -1 | awk '{ gsub(",", "", $1); print $1 }'; }
  calls() { python3 - "$1" "$2" <<'PY'
import re, sys
names, total, current = {}, 0, None
for line in open(sys.argv[1]):
    m = re.match(r'c?fn=\((\d+)\)(?: (.*))?', line)
    if m:
        if m.group(2): names[m.group(1)] = m.group(2)
        current = names.get(m.group(1), '') if line.startswith('cfn') else None
        continue
    if line.startswith('calls=') and current is not None:
        if sys.argv[2] in current: total += int(line[6:].split()[0])
        current = None
print(total)
PY
  }
  flat_ir=$(inclusive "$work/cg.0" 'sinks.cc:profiling::sampler::deliver\(')
  flat_n=$(calls "$work/cg.0" 'sampler::deliver(')
  stack_ir=$(inclusive "$work/cg.1" 'deliver_stack')
  stack_n=$(calls "$work/cg.1" 'deliver_stack')
  line=$(grep '^python' "$work/cgstats" | tail -1)
  set -- $line
  printf 'flat sample (deliver):          %7.0f instructions\n' "$(echo "$flat_ir / $flat_n" | bc -l)"
  printf 'stack (unwind + table add):     %7.0f instructions, %.1f frames a stack\n' \
    "$(echo "$stack_ir / $stack_n" | bc -l)" "$(echo "${14} / ($3 + $5)" | bc -l)"
fi
