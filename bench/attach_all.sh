#!/usr/bin/env bash
# Issue 33: what watching the whole machine costs. Three busy programs of
# different kinds run (a C loop, a Python loop, a loop of small system
# calls); `profil attach --all --duration D` and `perf record -a -g -F HZ --
# sleep D` take turns (ROUNDS rounds, alternating which goes first), and
# each one's own CPU time (user + system: cpu_of) is printed
# with the ratio profil / perf of the medians. perf record -a also reads
# every CPU's ring; -g gives it the kernel's and the frame-pointer user
# call chains (cheap), where profil copies and unwinds user stacks.
set -uo pipefail
. "$(dirname "$0")/lib/measure.sh"  # cpu_of, median
build=${1:-build}
profil=${PROFIL_TOOL:-$build/bin/profil}
hz=${BENCH_HZ:-500}
seconds=${BENCH_SECONDS:-5}
rounds=${BENCH_ROUNDS:-3}
[ "$(id -u)" = 0 ] || { echo "attach_all: skipped, per-CPU events need root"; exit 0; }
command -v perf > /dev/null || { echo "attach_all: skipped, no perf"; exit 0; }
out=$(mktemp -d "${TMPDIR:-/tmp}/profil-attach-all.XXXXXX")
busy=()
cleanup() { kill "${busy[@]}" 2> /dev/null; rm -rf "$out"; }
trap cleanup EXIT

# The busy programs, each ended with the script.
bash -c 'while :; do :; done' & busy+=($!)
python3 -c 'while True: sum(range(1000))' & busy+=($!)
dd if=/dev/zero of=/dev/null bs=1 2> /dev/null & busy+=($!)

# profil names every sample as it writes its files (symbols, inline frames,
# interpreters); perf record names none, perf report does: both sides are
# measured with and without that part.
kinds=(profil profil_raw perf perf_report)
for k in "${kinds[@]}"; do : > "$out/$k"; done
for ((r = 0; r < rounds; r++)); do
  run_profil() {
    cpu_of "$profil" attach --all --hz "$hz" --duration "${seconds}s" -o "$out/p$r" >> "$out/profil"
    cpu_of "$profil" attach --all --hz "$hz" --duration "${seconds}s" --no-symbolize -o "$out/q$r" >> "$out/profil_raw"
  }
  run_perf() {
    cpu_of perf record -q -a -g -F "$hz" -o "$out/perf.data" -- sleep "$seconds" >> "$out/perf"
    cpu_of perf report -i "$out/perf.data" --stdio >> "$out/perf_report"
  }
  if ((r % 2 == 0)); then run_profil; run_perf; else run_perf; run_profil; fi
done
m() { median < "$out/$1"; }
runs() { paste -sd' ' "$out/$1"; }
ratio() { echo "$1 / ($2 + 0.000001)" | bc -l; }
echo "attach --all, $seconds s at $hz Hz beside three busy programs, $rounds rounds alternating; CPU seconds, median (runs)"
printf '  sampling only:   profil --no-symbolize %s (%s)   perf record -a -g %s (%s)   ratio %.2f\n' \
  "$(m profil_raw)" "$(runs profil_raw)" "$(m perf)" "$(runs perf)" "$(ratio "$(m profil_raw)" "$(m perf)")"
both=$(echo "$(m perf) + $(m perf_report)" | bc -l)
printf '  with names:      profil %s (%s)   perf record + perf report %.2f (report %s)   ratio %.2f\n' \
  "$(m profil)" "$(runs profil)" "$both" "$(runs perf_report)" "$(ratio "$(m profil)" "$both")"
