#!/usr/bin/env bash
# A Python thread's label says whether it held the GIL (issue 31): PYTHON
# runs tests/python_progs/gil.py under profil run (CPU time, from outside),
# one thread spinning in pure Python, one compressing with zlib (the GIL
# let go while deflate runs). profil report --by thread labels each
# "NAME [GIL P %]", P its share of samples holding the GIL; checked:
# - the spinner's share is consistent with at least 90 % (P/100 >= 0.90
#   less 3 binomial standard deviations of its n samples, less the label's
#   rounding), the hasher's with at most 50 % ("mostly not", as bounded);
#   with --inside (the sampling handler reads the GIL on the sampled thread
#   itself, at the sample: nothing can move between the sample and the
#   read) at least 95 % and at most 10 %;
# - each thread has at least 100 samples;
# - the labels survive profil merge --by-process (the pprof label gil).
# As root the BPF program reads the GIL at the sample unless --no-bpf is
# given (then after the fact: approximate, docs/python.md); with --inside
# the program reads it itself (runtime/python_inside.h).
# Usage: run_python_gil.sh PROFIL PYTHON [profil run options...]
set -euo pipefail
profil=$1 python=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/profil-python-gil.XXXXXX")
trap 'rm -rf "$work"' EXIT

"$profil" run --hz 1000 -o "$work/out" "$@" -- "$python" "$here/python_progs/gil.py" 1 > "$work/stdout" 2> "$work/stderr" || {
  echo "profil run failed:"; cat "$work/stderr"; exit 1; }
case " $* " in
  *" --no-bpf "* | *" --inside "*) ;;
  *) if [ "$(id -u)" = 0 ]; then
       grep "read at the sample by BPF" "$work/stderr" || {
         echo "FAIL: as root the frames were not read at the sample:"; cat "$work/stderr"; exit 1; }
     fi ;;
esac
profile=$(ls "$work"/out/*.pb.gz | head -1)

spinner_p=0.90 hasher_p=0.50
case " $* " in *" --inside "*) spinner_p=0.95 hasher_p=0.10 ;; esac

check() {  # a --by thread table on stdin
  awk -v sp="$spinner_p" -v hp="$hasher_p" '
    / (spinner|hasher) \[GIL [0-9]+ %\]$/ {
      n = $1; name = $(NF - 3); p = $(NF - 1)
      samples[name] = n; share[name] = p / 100
    }
    END {
      bad = 0
      if (!("spinner" in samples) || !("hasher" in samples)) { print "FAIL: no GIL label on the spinner or the hasher"; exit 1 }
      for (t in samples) {
        n = samples[t]
        if (n < 100) { printf "FAIL: %s has %d samples (fewer than 100)\n", t, n; bad = 1; continue }
        if (t == "spinner") { bound = sp - 3 * sqrt(sp * (1 - sp) / n) - 0.005; ok = share[t] >= bound; rel = ">=" }
        else { bound = hp + 3 * sqrt(hp * (1 - hp) / n) + 0.005; ok = share[t] <= bound; rel = "<=" }
        printf "%s: %d samples, GIL held in %.2f (bound %s %.3f)\n", t, n, share[t], rel, bound
        if (!ok) { printf "FAIL: %s out of bound\n", t; bad = 1 }
      }
      exit bad
    }'
}

"$profil" report --by thread "$profile" > "$work/threads.txt"
check < "$work/threads.txt" || { cat "$work/threads.txt"; exit 1; }
# Through a merge that keeps threads (the samples' pprof label gil).
"$profil" merge --by-process -o "$work/merged.pb.gz" "$profile" 2> /dev/null
"$profil" report --by thread "$work/merged.pb.gz" > "$work/merged.txt"
diff <(grep -o '[a-z]* \[GIL [0-9]* %\]' "$work/threads.txt") <(grep -o '[a-z]* \[GIL [0-9]* %\]' "$work/merged.txt") || {
  echo "FAIL: the GIL labels changed through profil merge"; exit 1; }
echo "ok: $python $*"
