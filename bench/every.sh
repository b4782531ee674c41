#!/usr/bin/env bash
# Issue 21's target "--every 1s for 60 s: 60 files whose sum matches one
# 60 s profile within binomial error, each costing the program <= 10 ms of
# CPU". bench/every_work.c computes for EVERY_SECONDS (60) of wall time in
# four functions of weights 1:2:3:4 and prints its CPU time and the rounds
# it did. Three runs, alternating so that a change in the machine's load
# hits both kinds:
#
#   whole    profil run (outside): one profile of the run
#   every    profil run --every 1s: a snapshot a second
#   whole2   the same as whole again
#
# Reported: the number of snapshot files; the merged snapshots (profil
# merge) against the whole run's profile, function by function, as two
# binomial samples: each function's share, the z of their difference, and
# a chi-square test of homogeneity over the functions (its p-value); the
# same for whole2 against whole, which is what two runs of the program
# differ by without snapshots (the function's relative speeds move with
# the machine's load, so two runs are not two draws of one distribution
# exactly). Cost: the program's CPU per round in each run (a snapshot
# costs the program what its rounds cost more with --every), and profil's
# own CPU (the run's user+sys less the program's), with and without
# snapshots, per snapshot.
set -uo pipefail
build=${1:-build}
profil=$(realpath "${PROFIL_TOOL:-$build/bin/profil}")
seconds=${EVERY_SECONDS:-60}
hz=${EVERY_HZ:-500}
out=$(mktemp -d "${TMPDIR:-/tmp}/profil-every.XXXXXX")
trap 'rm -rf "$out"' EXIT
here=$(cd "$(dirname "$0")" && pwd)
cc -O2 -g -o "$out/every_work" "$here/every_work.c" || { echo "every: cannot compile every_work.c"; exit 1; }
echo "every: profil run --every 1s for ${seconds} s at $hz Hz, against one profile of the same program"
# --every samples from outside: perf events must be allowed.
if "$profil" run --every 1s -o "$out/probe" -- /bin/true 2>&1 | grep -q 'refuses perf events'; then
  echo "every: skipped: the kernel refuses perf events here (--every samples from outside)"
  exit 0
fi
rm -rf "$out/probe"

# run NAME [profil options]: the program for $seconds under profil run;
# sets NAME_total (user+sys of profil and the program), NAME_cpu and
# NAME_rounds (the program's own).
run() {
  local name=$1
  shift
  local TIMEFORMAT='%U %S' total
  total=$({ time "$profil" run --hz "$hz" "$@" -o "$out/$name" -- "$out/every_work" "$seconds" > "$out/$name.stdout" \
    2> "$out/$name.stderr"; } 2>&1 | awk '{ printf "%.3f", $1 + $2 }')
  printf -v "${name}_total" %s "$total"
  printf -v "${name}_cpu" %s "$(awk '/^cpu/ { print $2 }' "$out/$name.stdout")"
  printf -v "${name}_rounds" %s "$(awk '/^cpu/ { print $4 }' "$out/$name.stdout")"
}

load0=$(cut -d' ' -f1 /proc/loadavg)
run whole
run every --every 1s
run whole2
load1=$(cut -d' ' -f1 /proc/loadavg)
snapshots=$(ls "$out/every" | grep -c '\.s[0-9]*\.pb\.gz$')
"$profil" merge -o "$out/merged.pb.gz" "$out/every"/*.pb.gz > /dev/null 2>&1 || { echo "every: profil merge failed"; exit 1; }
"$profil" report --format csv --top 1000 "$out/merged.pb.gz" > "$out/every.csv"
"$profil" report --format csv --top 1000 "$out/whole"/*.pb.gz > "$out/whole.csv"
"$profil" report --format csv --top 1000 "$out/whole2"/*.pb.gz > "$out/whole2.csv"

echo "load average $load0 at the start, $load1 at the end"
echo "snapshot files: $snapshots"
compare() {
  python3 - "$@" << 'EOF'
import csv, math, sys

def counts(path):
    with open(path) as f:
        rows = list(csv.DictReader(f))
    c = {}
    for r in rows:
        c[r["function"]] = c.get(r["function"], 0) + int(r["samples"])
    return c

def upper_gamma_q(a, x):
    # The regularized upper incomplete gamma function Q(a, x): the
    # chi-square's p-value is Q(df / 2, chi / 2) (Numerical Recipes 6.2).
    if x <= 0: return 1.0
    lead = math.exp(-x + a * math.log(x) - math.lgamma(a))
    if x < a + 1:
        term = total = 1.0 / a
        n = a
        for _ in range(1000):
            n += 1; term *= x / n; total += term
            if abs(term) < abs(total) * 1e-15: break
        return 1 - total * lead
    b, c, d = x + 1 - a, 1e300, 1 / (x + 1 - a)
    h = d
    for i in range(1, 1000):
        an = -i * (i - a); b += 2
        d = an * d + b; d = 1e-300 if abs(d) < 1e-300 else d
        c = b + an / c; c = 1e-300 if abs(c) < 1e-300 else c
        d = 1 / d; h *= d * c
        if abs(d * c - 1) < 1e-15: break
    return lead * h

e, w = counts(sys.argv[1]), counts(sys.argv[2])
le, lw = sys.argv[3], sys.argv[4]
ne, nw = sum(e.values()), sum(w.values())
# Functions with 5+ expected samples on each side; the rest pooled.
names = [f for f in sorted(set(e) | set(w), key=lambda f: -(e.get(f, 0) + w.get(f, 0)))
         if (e.get(f, 0) + w.get(f, 0)) * min(ne, nw) / (ne + nw) >= 5]
rest_e = ne - sum(e.get(f, 0) for f in names)
rest_w = nw - sum(w.get(f, 0) for f in names)
cells = [(f, e.get(f, 0), w.get(f, 0)) for f in names]
if (rest_e + rest_w) * min(ne, nw) / (ne + nw) >= 5: cells.append(("(others)", rest_e, rest_w))
print("%-14s %8s %8s %8s %8s %6s" % ("function", le, "share", lw, "share", "z"))
chi, worst = 0.0, 0.0
for f, a, b in cells:
    p = (a + b) / (ne + nw)
    se = math.sqrt(p * (1 - p) * (1 / ne + 1 / nw)) if 0 < p < 1 else 1
    z = (a / ne - b / nw) / se
    worst = max(worst, abs(z))
    for obs, n in ((a, ne), (b, nw)):
        exp = p * n
        chi += (obs - exp) ** 2 / exp if exp > 0 else 0
    print("%-14s %8d %7.2f%% %8d %7.2f%% %6.2f" % (f[:14], a, 100 * a / ne, b, 100 * b / nw, z))
df = max(1, len(cells) - 1)
print("%-14s %8d %8s %8d" % ("samples", ne, "", nw))
print("chi-square %.2f on %d df: p = %.3f; largest |z| %.2f" % (chi, df, upper_gamma_q(df / 2, chi / 2), worst))
EOF
}
echo "-- the merged snapshots against the whole run"
compare "$out/every.csv" "$out/whole.csv" every whole
echo "-- two whole runs (the program's own run-to-run difference)"
compare "$out/whole2.csv" "$out/whole.csv" whole2 whole
awk -v tw="$whole_total" -v cw="$whole_cpu" -v rw="$whole_rounds" -v te="$every_total" -v ce="$every_cpu" \
  -v re="$every_rounds" -v t2="$whole2_total" -v c2="$whole2_cpu" -v r2="$whole2_rounds" -v n="$snapshots" 'BEGIN {
  printf "%-30s %9s %9s %9s\n", "", "whole", "every", "whole2"
  printf "%-30s %8.3fs %8.3fs %8.3fs\n", "the program'"'"'s CPU", cw, ce, c2
  printf "%-30s %9d %9d %9d\n", "its rounds", rw, re, r2
  printf "%-30s %8.3fms %7.3fms %7.3fms\n", "its CPU per round", 1000 * cw / rw, 1000 * ce / re, 1000 * c2 / r2
  printf "%-30s %8.3fs %8.3fs %8.3fs\n", "profil'"'"'s own CPU", tw - cw, te - ce, t2 - c2
  if (n > 0) {
    base = ((cw / rw) + (c2 / r2)) / 2
    printf "per snapshot: the program %+.2f ms (its CPU per round with snapshots against the mean of the whole runs, x its rounds; the two whole runs differ by %.2f ms per round), profil %+.1f ms\n",
      1000 * (ce / re - base) * re / n, 1000 * (c2 / r2 - cw / rw), 1000 * ((te - ce) - ((tw - cw) + (t2 - c2)) / 2) / n
  }
}'
