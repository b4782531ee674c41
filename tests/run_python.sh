#!/usr/bin/env bash
# profil run names a Python program's own functions (issue 31): run
# PYTHON on tests/python_progs/shares.py under profil run, then check
# - the shares: three()'s part of three() + one() in the profile against
#   the split measured by timing each alone, within 4 binomial standard
#   deviations of the sampled count plus the error of reading the frames
#   after the sample (ERROR_ALLOWED, an absolute share: docs/python.md);
# - the merging: of the samples in keyed() (called back by sorted(), in C),
#   at least 99 % read main -> c_path -> (a native frame) -> keyed, root
#   first;
# - the evaluation loop left without Python frames in none of the samples
#   of the merged view from outside (at most 1 % with --inside), those
#   whose Python stack moved before it was read (after the fact: counted by
#   a frame of their own) apart.
# Usage: run_python.sh PROFIL PYTHON [profil run options...]
set -euo pipefail
profil=$1 python=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
. "$here/interp_checks.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/profil-python.XXXXXX")
trap 'rm -rf "$work"' EXIT
error_allowed=${ERROR_ALLOWED:-0.05}
# The evaluation loop's native frame: PyEval_EvalFrameEx on 2.7; from 3.6
# on _PyEval_EvalFrameDefault, PyEval_EvalFrameEx being the wrapper that
# calls it before the new frame is linked, so a sample in that wrapper is no
# loop left bare (a loaded run had one, under keyed()'s call from sorted()).
case $("$python" -c 'import sys; print(sys.version_info[0])') in
  2) loop='(^|;|`)PyEval_EvalFrameEx( |;|$)' ;;
  *) loop='(^|;|`)_PyEval_EvalFrameDefault( |;|$)' ;;
esac

if [ "${1:-}" = --deep ]; then
  shift
  # 2.7 and 3.10 take several native frames per Python call: a stack of 22
  # Python calls is more native frames than the default depth keeps.
  PROFIL_STACK_DEPTH=512 "$profil" run --hz 1000 -o "$work/out" "$@" -- "$python" "$here/python_progs/deep.py" 2 \
    > "$work/stdout" 2> "$work/stderr" || { echo "profil run failed:"; cat "$work/stderr"; exit 1; }
  "$profil" report --format folded "$(ls "$work"/out/*.pb.gz | head -1)" > "$work/merged.folded"
  awk -v m="${MISFITS_ALLOWED:-0.01}" -v loop="$loop" '{ n = $NF
         if ($0 ~ /the stack moved before it was read/) misfit += n
         else if ($0 ~ loop) bare += n
         else if ($0 ~ /a call entered or left/) between += n
         else if ($0 ~ /(^|;)down(;| |$)/) python += n }
       END { total = misfit + bare + between + python
             printf "deep recursion: %d samples in Python code, %d did not fit (%.2f %%), %d in a call entered or left, %d loop frames without Python frames\n",
                    total, misfit, total ? 100 * misfit / total : 0, between, bare
             if (total < 500) { print "too few samples"; exit 1 }
             exit (misfit <= m * total) ? 0 : 1 }' "$work/merged.folded" || {
    echo "FAIL: more Python stacks than allowed did not fit"; grep moved "$work/merged.folded" | head -3 | cut -c1-400; exit 1; }
  echo "ok: $python"
  exit 0
fi

"$profil" run --hz 1000 -o "$work/out" "$@" -- "$python" "$here/python_progs/shares.py" 2 > "$work/stdout" 2> "$work/stderr" || {
  echo "profil run failed:"; cat "$work/stderr"; exit 1; }
# The way the frames were read, as asked (interp_checks.sh).
read_way_checked Python "$work/stderr" "$@"
timed=$(awk '/^timed_three/ {print $2}' "$work/stdout")
[ -n "$timed" ] || { echo "the program printed no timing:"; cat "$work/stdout" "$work/stderr"; exit 1; }
profile=$(ls "$work"/out/*.pb.gz | head -1)

# Python frames alone, folded (root first): three's and one's samples.
"$profil" report --interpreter python --format folded "$profile" > "$work/python.folded"
shares_agree "$work/python.folded" "$timed" "$error_allowed"

# Merged, with objects: keyed's samples read main -> c_path -> native -> keyed.
"$profil" report --format folded --folded-objects "$profile" > "$work/merged.folded"
awk '{ n = $NF; $NF = ""; sub(/ +$/, ""); k = split($0, f, ";"); keyed = 0
       for (i = 1; i <= k; ++i) if (f[i] == "[python]`keyed") keyed = i
       if (!keyed) next
       all += n; main = 0; cpath = 0; native = 0
       for (i = 1; i < keyed; ++i) {
         if (f[i] == "[python]`main") main = i
         else if (f[i] == "[python]`c_path" && main) cpath = i
         else if (cpath && f[i] !~ /^\[python\]`/) native = 1
       }
       if (main && cpath && native) ok += n }
     END { printf "merging: %d of %d samples in keyed() in the program'"'"'s order\n", ok, all
           if (all < 20) { print "too few samples in keyed()"; exit 1 }
           exit (ok >= 0.99 * all) ? 0 : 1 }' "$work/merged.folded" || {
  echo "FAIL: keyed() out of order"; grep keyed "$work/merged.folded" | sort -k2 -nr | head -3; exit 1; }

# The loop's native frame left without Python frames (but for the samples
# whose Python stack moved before it was read: said by their own frame,
# counted apart: after the fact, how many depends on how late the reader
# gets to a sample, which a loaded machine decides; 10 % here, 10.03 %
# beside two busy loops, so only a sanity bound, MISFITS_ALLOWED; at the
# sample, at most 1 %). From outside no loop frame is left bare at all: a
# sample read with no Python frames (or a chain it could not read) has
# moved, and a thread whose state was not found is marked too
# (outside/python_frames.h; issue 31: a CI run had 28 bare samples of the
# interpreter's start, a round of them read while it compiled the script).
# Inside, the handler's reads keep the 1 % bound.
case " $* " in
  *" --inside "*) bare_allowed=0.01 ;;
  *) bare_allowed=0 ;;
esac
loop_never_bare "$work/merged.folded" "$loop" "${MISFITS_ALLOWED:-0.5}" "$bare_allowed"
echo "ok: $python"
