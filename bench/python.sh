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
# medians of BENCH_REPS. Last, profil's own CPU per sample measured inside
# each run (below; BENCH_OWN=0 leaves it out, BENCH_ONLY_OWN=1 runs it
# alone).
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

if [ "${BENCH_ONLY_OWN:-0}" != 1 ]; then
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
fi

# profil's own CPU per sample, measured inside each run (issue 31: at 1 kHz
# the plain run's own noise is about the difference measured above): the
# CPU of profil's own threads (the reader's most), from their
# /proc/PID/task/TID/schedstat read every 10 ms while profil runs (the last
# 10 ms of each thread are missed, alike in both ways), plus, where the BPF
# program reads the frames at the sample, its own run time per run
# (kernel.bpf_stats_enabled=1 while it runs, restored after; bpftool prog
# fdinfo's run_time_ns / run_cnt, one run a sample), per sample of the
# profile. The Python program's CPU is in neither, so its variation is not
# in the ratio.
# The main thread's share of it is the conversion after the run (symbols,
# the kernel's, the files written): ~130-200 ms a run, its spread between
# runs of the same command larger than what the frames add at 4 kHz, and
# the same with the frames and without. The second table leaves it out:
# the sampling threads alone (the reader's most) and the BPF program.
own_cpu_ns=0 own_bpf_ns=0 own_sampling_ns=0
own_cpu() {  # COMMAND...: sets own_cpu_ns (profil's threads), own_sampling_ns (all but the main one) and own_bpf_ns (per BPF run, 0: none)
  local -A last=()
  local pid tick=0 f v tid fd
  exec {fd}<> <(:)
  "$@" > /dev/null 2>&1 &
  pid=$!
  own_bpf_ns=0
  while kill -0 "$pid" 2> /dev/null; do
    for f in /proc/"$pid"/task/*/schedstat; do
      # 2> first: a thread gone since the glob fails the < redirection itself.
      read -r v _ 2> /dev/null < "$f" || continue
      tid=${f%/schedstat}; tid=${tid##*/}
      last[$tid]=$v
    done
    # The program's fd's fdinfo counts its runs (kernel/bpf/syscall.c).
    if [ -n "$bpf_stats" ] && ((tick++ % 5 == 2)); then
      v=$(awk '/^run_time_ns:/ { t += $2 } /^run_cnt:/ { c += $2 } END { if (c) printf "%d", t / c }' \
        $(grep -l '^prog_type:' /proc/"$pid"/fdinfo/* 2> /dev/null) < /dev/null 2> /dev/null)
      [ "${v:-0}" -gt 0 ] && own_bpf_ns=$v
    fi
    read -r -t 0.01 -u "$fd" _
  done
  wait "$pid"
  exec {fd}>&-
  own_cpu_ns=0
  for v in "${last[@]}"; do own_cpu_ns=$((own_cpu_ns + v)); done
  own_sampling_ns=$((own_cpu_ns - ${last[$pid]:-0}))
}

# BENCH_BEFORE=PATH: another build's profil (main's, say) run in the same
# runs, alternating with this one's, as rows of its own.
if [ "${BENCH_OWN:-1}" = 1 ]; then
  bpf_stats=
  if old_stats=$(sysctl -n kernel.bpf_stats_enabled 2> /dev/null) && sysctl -q -w kernel.bpf_stats_enabled=1 2> /dev/null; then
    bpf_stats=1
    trap 'sysctl -q -w kernel.bpf_stats_enabled="$old_stats"; rm -rf "$out"' EXIT
  fi
  tools=("$profil") sampling=()
  # The main thread's CPU a sample, by way: each run's total less its
  # sampling threads' (and the BPF run's, in both).
  main_of() { paste "$1" "$2" | awk '{ print $1 - $2 }' | median; }
  [ -n "${BENCH_BEFORE:-}" ] && tools+=("$BENCH_BEFORE")
  echo
  echo "profil's own CPU per sample (its threads' schedstat + the BPF program's run time), us, $reps alternating runs, load $(cut -d' ' -f1-3 /proc/loadavg)"
  printf '%-7s %5s %14s %14s %14s %8s %14s %8s\n' build hz "without frames" "at the sample" "(BPF per run)" "ratio" "after the fact" "ratio"
  for hz in $rates; do
    for ((t = 0; t < ${#tools[@]}; t++)); do
      : > "$out/on$t"; : > "$out/ob$t"; : > "$out/obb$t"; : > "$out/ol$t"; : > "$out/sn$t"; : > "$out/sb$t"; : > "$out/sl$t"
    done
    for ((k = 0; k < reps; k++)); do
      for way in without bpf late; do
        case $way in
          without) set -- --no-interpreter ;;
          bpf) set -- ;;
          late) set -- --no-bpf ;;
        esac
        for ((t = 0; t < ${#tools[@]}; t++)); do
          own_cpu "${tools[$t]}" run --hz "$hz" "$@" -o "$out/$way" -- "${work[@]}"
          s=$(samples_of "$out/$way")
          if [ -n "$s" ] && [ "$s" -gt 0 ]; then
            case $way in
              without)
                echo "$own_cpu_ns / 1000 / $s" | bc -l >> "$out/on$t"
                echo "$own_sampling_ns / 1000 / $s" | bc -l >> "$out/sn$t"
                ;;
              bpf)
                echo "($own_cpu_ns / $s + $own_bpf_ns) / 1000" | bc -l >> "$out/ob$t"
                echo "($own_sampling_ns / $s + $own_bpf_ns) / 1000" | bc -l >> "$out/sb$t"
                echo "$own_bpf_ns / 1000" | bc -l >> "$out/obb$t"
                ;;
              late)
                echo "$own_cpu_ns / 1000 / $s" | bc -l >> "$out/ol$t"
                echo "$own_sampling_ns / 1000 / $s" | bc -l >> "$out/sl$t"
                ;;
            esac
          fi
          rm -rf "${out:?}/$way"
        done
      done
    done
    for ((t = 0; t < ${#tools[@]}; t++)); do
      n=$(median < "$out/on$t") b=$(median < "$out/ob$t") l=$(median < "$out/ol$t")
      printf '%-7s %5s %14.1f %14.1f %14.2f %7.0f%% %14.1f %7.0f%%\n' "$( ((t == 0)) && echo this || echo before)" "$hz" \
        "$n" "$b" "$(median < "$out/obb$t")" "$(echo "($b / $n - 1) * 100" | bc -l)" "$l" "$(echo "($l / $n - 1) * 100" | bc -l)"
      total=$(median < "$out/on$t")
      n=$(median < "$out/sn$t") b=$(median < "$out/sb$t") l=$(median < "$out/sl$t")
      sampling+=("$(printf '%-7s %5s %7.1f %7.1f %7.1f %9.1f %9.1f %9.1f %+9.1f (%3.0f%%) %+9.1f (%3.0f%%)' \
        "$( ((t == 0)) && echo this || echo before)" "$hz" \
        "$(main_of "$out/on$t" "$out/sn$t")" "$(main_of "$out/ob$t" "$out/sb$t")" "$(main_of "$out/ol$t" "$out/sl$t")" \
        "$n" "$b" "$l" "$(echo "$b - $n" | bc -l)" "$(echo "($b - $n) * 100 / $total" | bc -l)" \
        "$(echo "$l - $n" | bc -l)" "$(echo "($l - $n) * 100 / $total" | bc -l)")")
    done
  done
  echo
  echo "the same runs by thread, us a sample: the main thread (the conversion after the run) and the sampling"
  echo "threads (all the others) + the BPF program's run, by way (without frames, at the sample, after the fact);"
  echo "what the frames add to the sampling threads, and that as % of the whole without frames"
  printf '%-7s %5s %7s %7s %7s %9s %9s %9s %16s %16s\n' build hz main:w/o bpf late "samp:w/o" bpf late "added, bpf" "added, late"
  printf '%s\n' "${sampling[@]}"
  echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
fi
