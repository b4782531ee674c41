#!/usr/bin/env bash
# Sampler benchmark (DESIGN.md §5), glibc's profil() and libprofil's side by
# side in one run: samples per CPU-second, CPU time accounted, slowdown,
# and the instructions the signal handler executes per sample (callgrind).
set -euo pipefail
build=${1:-build}
bench=$build/bin/sampler_bench
lib=$(cd "$build/lib" && pwd)/libprofil.so
seconds=${BENCH_SECONDS:-1.0}

field() { tr ' ' '\n' | sed -n "s/^$1=//p"; }

echo "== sampler: rates and accounting (${seconds}s of CPU per run, 2 threads) =="
base=$(BENCH_NO_PROFIL=1 "$bench" "$seconds" 2 | field iterations_per_cpu_s)
printf '%-22s %8s %14s %14s %14s %10s\n' "implementation" "hz" "signals/cpu-s" "counts/cpu-s" "accounted err" "slowdown"
row() { # label hz line
  local line=$3
  local it; it=$(echo "$line" | field iterations_per_cpu_s)
  printf '%-22s %8s %14s %14s %13s%% %9.3fx\n' "$1" "$2" \
    "$(echo "$line" | field signals_per_cpu_s)" "$(echo "$line" | field counts_per_cpu_s)" \
    "$(echo "$line" | field accounted_error_pct)" "$(echo "$base / $it" | bc -l)"
}
row "glibc profil" 100 "$("$bench" "$seconds" 2 100)"
# 10 kHz only on perf: the cpu clock's timers fire at the kernel tick.
for clock in cpu perf; do
  rates="100 250 1000 4000"
  [ "$clock" = perf ] && rates="$rates 10000"
  for hz in $rates; do
    row "libprofil $clock" "$hz" "$(LD_PRELOAD=$lib PROFIL_CLOCK=$clock PROFIL_HZ=$hz "$bench" "$seconds" 2)"
  done
done
if command -v perf >/dev/null && perf record -q -o /dev/null true 2>/dev/null; then
  # The peer for slowdown: perf record sampling task-clock at the same rates.
  for hz in 1000 4000 10000; do
    line=$(BENCH_NO_PROFIL=1 perf record -q -F "$hz" -e task-clock -o "$(mktemp)" "$bench" "$seconds" 2 2>/dev/null)
    printf '%-22s %8s %14s %14s %14s %9.3fx\n' "perf record" "$hz" "-" "-" "-" \
      "$(echo "$base / $(echo "$line" | field iterations_per_cpu_s)" | bc -l)"
  done
fi
echo "(signals/cpu-s -1: glibc keeps no count; slowdown is work per CPU-second, unprofiled / profiled)"

if command -v valgrind >/dev/null; then
  echo
  echo "== sampler: instructions per sample in the signal handler (callgrind, one region) =="
  out=$(mktemp -d)
  for clock in cpu perf; do
    # LD_BIND_NOW: the one-time lazy binding of the handler's first PLT call
    # (~800 instructions) is start-up, not a sample's cost.
    line=$(LD_BIND_NOW=1 LD_PRELOAD=$lib PROFIL_CLOCK=$clock PROFIL_HZ=1000 valgrind --tool=callgrind \
      --callgrind-out-file="$out/cg.$clock" "$bench" 0.3 1 2>/dev/null)
    signals=$(echo "$line" | field signals_per_cpu_s)
    cpu=$(echo "$line" | field cpu)
    ir=$(callgrind_annotate --inclusive=yes --threshold=100 "$out/cg.$clock" 2>/dev/null |
      grep 'on_sampling_signal' | head -1 | awk '{gsub(",","",$1); print $1}')
    n=$(echo "$signals * $cpu" | bc -l)
    printf 'clock %-5s handler calls %6.0f  instructions/sample %6.1f\n' "$clock" "$n" "$(echo "$ir / $n" | bc -l)"
  done
  rm -rf "$out"
  echo "(DESIGN.md target: at most 60 for one region)"
fi
