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
    echo "FAIL: the evaluation loop without the program's frames"; grep -E "$2" "$1" | sort -k2 -nr | head -3 | cut -c1-600; return 1; }
}
