#!/usr/bin/env bash
# profil's Python frames against CPython's own names (issue 31): PYTHON
# (3.12+) runs tests/python_progs/leaves.py with -X perf under profil run,
# so each sample has both the frames profil read (the python view) and the
# perf trampoline's py:: frame named from /tmp/perf-PID.map (the native
# view). three()'s share of three() + one() must agree between the two,
# within 4 binomial standard deviations of the samples plus 2 points.
# Usage: run_python_xperf.sh PROFIL PYTHON
set -euo pipefail
profil=$1 python=$2
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/profil-xperf.XXXXXX")
# CPython leaves /tmp/perf-PID.map behind: removed with the work, so that
# no later process given the same pid meets it.
trap 'for m in "$work"/out/perf-*.map; do [ -e "$m" ] && rm -f "/tmp/${m##*/}"; done; rm -rf "$work"' EXIT

"$profil" run --hz 1000 -o "$work/out" -- "$python" -X perf "$here/python_progs/leaves.py" 2 \
  > /dev/null 2> "$work/stderr" || { echo "profil run failed:"; cat "$work/stderr"; exit 1; }
profile=$(ls "$work"/out/*.pb.gz | head -1)
"$profil" report --interpreter python --format folded "$profile" > "$work/python.folded"
"$profil" report --interpreter native --format folded "$profile" > "$work/native.folded"
count() {  # count FILE THREE ONE: samples whose stack names each
  awk -v a="$2" -v b="$3" '{ n = $NF; if (index($0, a)) x += n; else if (index($0, b)) y += n } END { print x + 0, y + 0 }' "$1"
}
read -r p3 p1 < <(count "$work/python.folded" ";three " ";one ")
read -r x3 x1 < <(count "$work/native.folded" "py::three" "py::one")
awk -v p3="$p3" -v p1="$p1" -v x3="$x3" -v x1="$x1" 'BEGIN {
  n = p3 + p1; m = x3 + x1
  if (n < 500 || m < 500) { printf "too few samples: %d python, %d -X perf\n", n, m; exit 1 }
  p = p3 / n; x = x3 / m; d = p - x; if (d < 0) d = -d
  sd = sqrt(p * (1 - p) / n + x * (1 - x) / m)
  printf "three()'\''s share: %.4f of %d samples by profil'\''s frames, %.4f of %d by -X perf (allowed %.4f)\n", p, n, x, m, 4 * sd + 0.02
  exit (d <= 4 * sd + 0.02) ? 0 : 1 }' || { echo "FAIL: the shares disagree"; exit 1; }
