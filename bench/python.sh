#!/usr/bin/env bash
# Issue 31: what the Python frames cost. On tests/python_progs/shares.py
# (CPython 3.12 from pyenv where it is, else the system's python3):
# - profil's own CPU per sample from outside, with the Python frames and
#   without them (--no-interpreter), at 1 and 4 kHz: the CPU of profil run
#   (the program's and profil's) less the plain run's, per sample written;
# - the program's CPU under profil run, with and without the frames, and
#   under perf record -g of the same program started with -X perf (3.12+:
#   the perf map names the Python functions), as x the plain run.
# - the same read after the fact from outside (--no-bpf; the first table
#   reads them at the sample with the BPF program where allowed);
# - the same from inside (--inside, the handler reading the frames at the
#   sample), with the frames and without (PROFIL_INTERPRETER=0), both on
#   the perf-signal clock (the one a CPython process samples on inside:
#   docs/python.md), at 1 and 4 kHz.
# Runs alternate plain, profil, profil --no-interpreter, perf, ...;
# medians of BENCH_REPS.
set -uo pipefail
build=${1:-build}
profil=${PROFIL_TOOL:-$build/bin/profil}
reps=${BENCH_REPS:-5}
rates=${BENCH_RATES:-1000 4000}
here=$(cd "$(dirname "$0")" && pwd)
python=${BENCH_PYTHON:-$(ls "$HOME"/.pyenv/versions/3.12*/bin/python3.12 2>/dev/null | head -1)}
[ -n "$python" ] || python=$(command -v python3)
out=$(mktemp -d "${TMPDIR:-/tmp}/profil-python-bench.XXXXXX")
trap 'rm -rf "$out"' EXIT
work=("$python" "$here/../tests/python_progs/shares.py" 1.5)
perf_ok=$(command -v perf >/dev/null && "$python" -X perf -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' 2>/dev/null && echo 1)

. "$here/lib/measure.sh"

# One run of each kind: its CPU as x the plain run, and per sample.
record() {  # plain with without
  local sw sn
  sw=$(samples_of "$out/with"); sn=$(samples_of "$out/without")
  echo "$1" >> "$out/p"
  echo "$2 / $1" | bc -l >> "$out/w"
  echo "$3 / $1" | bc -l >> "$out/n"
  [ -n "$sw" ] && [ "$sw" -gt 0 ] && echo "($2 - $1) * 1000000 / $sw" | bc -l >> "$out/uw"
  [ -n "$sn" ] && [ "$sn" -gt 0 ] && echo "($3 - $1) * 1000000 / $sn" | bc -l >> "$out/un"
  return 0
}

echo "python frames: $python, $reps runs each, alternating"
printf '%5s %8s %12s %12s %14s %14s %10s\n' hz plain "with frames" "without" "us/sample with" "us/sample w/o" "perf -X perf"
for hz in $rates; do
  : > "$out/p"; : > "$out/w"; : > "$out/n"; : > "$out/uw"; : > "$out/un"; : > "$out/r"
  for ((k = 0; k < reps; k++)); do
    plain=$(cpu_of "${work[@]}")
    with=$(cpu_of "$profil" run --hz "$hz" -o "$out/with" -- "${work[@]}")
    without=$(cpu_of "$profil" run --hz "$hz" --no-interpreter -o "$out/without" -- "${work[@]}")
    record "$plain" "$with" "$without"
    if [ -n "$perf_ok" ]; then
      rec=$(cpu_of perf record -q -F "$hz" -g -o "$out/perf.data" -- "$python" -X perf "${work[@]:1}")
      echo "$rec / $plain" | bc -l >> "$out/r"
    fi
    rm -rf "$out/with" "$out/without" "$out/perf.data"
  done
  printf '%5s %7.2fs %11.2fx %11.2fx %14.1f %14.1f %10s\n' "$hz" "$(median < "$out/p")" "$(median < "$out/w")" \
    "$(median < "$out/n")" "$(median < "$out/uw")" "$(median < "$out/un")" \
    "$( [ -s "$out/r" ] && printf '%.2fx' "$(median < "$out/r")")"
done

# A table of two ways against the plain run, the same runs' plan as above:
# table TITLE "WITH COMMAND..." "WITHOUT COMMAND..." (each split on spaces;
# an env VAR=... first word sets the program's environment).
table() {
  local title=$1 with_cmd without_cmd
  read -r -a with_cmd <<< "$2"
  read -r -a without_cmd <<< "$3"
  echo
  echo "$title, the same runs' plan"
  printf '%5s %8s %12s %12s %14s %14s\n' hz plain "with frames" "without" "us/sample with" "us/sample w/o"
  for hz in $rates; do
    : > "$out/p"; : > "$out/w"; : > "$out/n"; : > "$out/uw"; : > "$out/un"
    for ((k = 0; k < reps; k++)); do
      plain=$(cpu_of "${work[@]}")
      with=$(cpu_of "${with_cmd[@]}" --hz "$hz" -o "$out/with" -- "${work[@]}")
      without=$(cpu_of "${without_cmd[@]}" --hz "$hz" -o "$out/without" -- "${work[@]}")
      record "$plain" "$with" "$without"
      rm -rf "$out/with" "$out/without"
    done
    printf '%5s %7.2fs %11.2fx %11.2fx %14.1f %14.1f\n' "$hz" "$(median < "$out/p")" "$(median < "$out/w")" \
      "$(median < "$out/n")" "$(median < "$out/uw")" "$(median < "$out/un")"
  done
}

table "inside (--inside --clock perf-signal)" "$profil run --inside --clock perf-signal" \
  "env PROFIL_INTERPRETER=0 $profil run --inside --clock perf-signal"
table "outside, read after the fact (--no-bpf)" "$profil run --no-bpf" "$profil run --no-interpreter"
