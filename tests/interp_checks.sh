# Checks shared by the interpreter-frames tests (run_python.sh,
# run_ruby.sh: issues 31 and 34), sourced by them.

# shares_agree FOLDED TIMED ERROR: in FOLDED (the program's frames alone,
# folded), three's part of three + one agrees with TIMED (its share timed
# alone) within 4 binomial standard deviations of the sampled count plus
# ERROR (an absolute share: reading the frames after the sample).
shares_agree() {
  local folded=$1 timed=$2 error=$3 n3 n1 n
  read -r n3 n1 < <(awk '{ n = $NF; $NF = ""; if ($0 ~ /(^|;)three(;| |$)/) a += n; else if ($0 ~ /(^|;)one(;| |$)/) b += n }
                         END { print a + 0, b + 0 }' "$folded")
  n=$((n3 + n1))
  [ "$n" -ge 200 ] || { echo "only $n samples in three and one"; head -20 "$folded"; return 1; }
  awk -v n3="$n3" -v n="$n" -v t="$timed" -v e="$error" 'BEGIN {
    p = n3 / n; sd = sqrt(t * (1 - t) / n); d = p - t; if (d < 0) d = -d
    printf "shares: three %.4f of %d samples, timed %.4f (allowed %.4f)\n", p, n, t, 4 * sd + e
    exit (d <= 4 * sd + e) ? 0 : 1 }' || { echo "FAIL: the shares do not agree"; return 1; }
}

# loop_never_bare FOLDED LOOP_REGEX MISFITS_ALLOWED [BARE_ALLOWED]: in
# FOLDED (merged), the evaluation loop's native frame (LOOP_REGEX) is left
# without the program's frames in at most BARE_ALLOWED of the samples (1 %
# unless given), those whose stack moved before it was read (counted by a
# frame of their own) apart, and those are at most MISFITS_ALLOWED of all.
loop_never_bare() {
  awk -v loop="$2" -v m="$3" -v b="${4:-0.01}" '{ n = $NF; total += n
         if ($0 ~ /the stack moved before it was read/) misfit += n
         else if ($0 ~ loop) bare += n }
       END { printf "%s without the program'"'"'s frames: %d of %d samples; stack moved before read: %d\n", loop, bare, total, misfit
             exit (bare <= b * total && misfit <= m * total) ? 0 : 1 }' "$1" || {
    echo "FAIL: the evaluation loop without the program's frames (innermost frames of the bare samples):"
    grep -v 'the stack moved before it was read' "$1" | grep -E "$2" | sort -k2 -nr | head -3 | rev | cut -c1-600 | rev; return 1; }
}

# read_way_checked RUNTIME STDERR [profil run options...]: the way the
# run's summary (in STDERR) says RUNTIME's frames ("Python", "Ruby") were
# read (outside/python_frames.h, ruby_frames.h) is the one asked for, so
# that a test never passes on a way it did not mean: with --no-bpf after
# the fact; else, as root, at the sample by the BPF program, and of those
# at most 1 % may not fit their native stack (a thread's first samples
# are read after the fact, and counted apart). --inside is not outside:
# not checked here.
read_way_checked() {
  local runtime=$1 stderr=$2 line at_sample misfits
  shift 2
  case " $* " in
    *" --inside "*) return 0 ;;
    *" --no-bpf "*)
      grep "$runtime frames in [0-9]* samples: read after the fact (--no-bpf)" "$stderr" || {
        echo "FAIL: with --no-bpf the $runtime frames were not said read after the fact:"; cat "$stderr"; return 1; } ;;
    *) if [ "$(id -u)" = 0 ]; then
         line=$(grep "$runtime frames in .* read at the sample by BPF" "$stderr") || {
           echo "FAIL: as root the $runtime frames were not read at the sample:"; cat "$stderr"; return 1; }
         echo "$line"
         read -r at_sample misfits < <(echo "$line" | sed -E 's/.*: ([0-9]+) read at the sample by BPF \(([0-9]+) did not fit.*/\1 \2/')
         awk -v a="$at_sample" -v m="$misfits" 'BEGIN { exit (a >= 100 && m <= 0.01 * a) ? 0 : 1 }' || {
           echo "FAIL: $misfits of $at_sample samples read at the sample did not fit"; return 1; }
       fi ;;
  esac
}

# moving_checked RUNTIME PROFIL WORK PROGRAM...: PROGRAM, whose stack
# changes depth every few microseconds (python_progs/moving.py,
# ruby_progs/moving.rb), run under PROFIL both ways. Read at the sample by
# the BPF program (as root), at most 1 % of those samples may have frames
# that do not fit their native stack; read after the fact (--no-bpf) the
# share is measured and printed, not bounded (how late the reader is
# decides it).
moving_checked() {
  local runtime=$1 profil=$2 work=$3 way line at_sample misfits
  shift 3
  [ "$(id -u)" = 0 ] || { echo "skipped: the BPF program needs root (or CAP_BPF and CAP_PERFMON)"; return 77; }
  for way in at_sample late; do
    local flags=()
    [ "$way" = late ] && flags=(--no-bpf)
    "$profil" run --hz 1000 "${flags[@]}" -o "$work/$way" -- "$@" > /dev/null 2> "$work/$way.stderr" || {
      echo "profil run failed:"; cat "$work/$way.stderr"; return 1; }
    grep "$runtime frames" "$work/$way.stderr" || { echo "no $runtime frames line:"; cat "$work/$way.stderr"; return 1; }
  done
  line=$(grep "$runtime frames in .* read at the sample by BPF" "$work/at_sample.stderr") || {
    echo "FAIL: not read at the sample"; return 1; }
  read -r at_sample misfits < <(echo "$line" | sed -E 's/.*: ([0-9]+) read at the sample by BPF \(([0-9]+) did not fit.*/\1 \2/')
  awk -v a="$at_sample" -v m="$misfits" 'BEGIN {
    printf "at the sample: %d of %d did not fit (%.2f %%)\n", m, a, a ? 100 * m / a : 0
    exit (a >= 500 && m <= 0.01 * a) ? 0 : 1 }' || { echo "FAIL: more than 1 % did not fit"; return 1; }
  echo "after the fact: $(grep "read after the fact" "$work/late.stderr")"
}
