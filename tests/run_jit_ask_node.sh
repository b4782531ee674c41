#!/usr/bin/env bash
# profil run --jit on node (issue 34, tools/profil/jit_ask.h): node started
# without any flag of the user's gets NODE_OPTIONS=--perf-basic-prof from
# profil, and the run says so. Targets: >= 95 % of the samples in JIT code
# named from the map, and the hottest JavaScript function's share within
# binomial error of what perf record -g gives it on node --perf-basic-prof
# of the same script (the table printed; perf's part skipped, saying so,
# where perf cannot run). The program's output is its own. And a jitdump
# the user asked node for (--perf-prof: jit-PID.dump in its working
# directory) is found by its mapping, kept beside the profile and read with
# its source lines (report/jitdump.h).
# Usage: run_jit_ask_node.sh PROFIL [RUN OPTION...]
set -euo pipefail
profil=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
shift
here=$(cd "$(dirname "$0")" && pwd)
command -v node > /dev/null || { echo "no node: skipped"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cp "$here/jit_progs/hot.js" "$dir/hot.js"  # its hotLoop is line 6 (checked below)
expected=$(node "$dir/hot.js")

# In a directory of its own: the flag makes V8 write a code log where node
# runs, which profil removes (jit_ask.h), and says so.
mkdir "$dir/jit"
(cd "$dir/jit" && "$profil" run --jit "$@" --hz 1000 -o "$dir/out" -- node "$dir/hot.js" > "$dir/stdout" 2> "$dir/err") ||
  { cat "$dir/err"; exit 1; }
[ "$(cat "$dir/stdout")" = "$expected" ] || { echo "the program's output changed: $(cat "$dir/stdout")"; exit 1; }
grep -q '^profil: --jit: the program started with NODE_OPTIONS=--perf-basic-prof' "$dir/err" ||
  { echo "the run does not say what --jit gave the program:"; cat "$dir/err"; exit 1; }
[ -z "$(ls -A "$dir/jit")" ] || { echo "--jit left files where node ran:"; ls -A "$dir/jit"; exit 1; }
grep -q '^profil: --jit: removed 1 code log' "$dir/err" || { echo "the run does not say what it removed:"; cat "$dir/err"; exit 1; }
pid=$(ls "$dir/out" | sed -n 's/^perf-\([0-9]*\)\.map$/\1/p' | head -1)
[ -n "$pid" ] || { echo "no perf-PID.map kept in the output directory:"; ls "$dir/out"; exit 1; }
rm -f "/tmp/perf-$pid.map"
"$profil" report --format csv "$dir/out/node.$pid.pb.gz" > "$dir/csv"
read -r all jit named hot < <(python3 "$here/jit_shares.py" "$dir/csv" hotLoop)
echo "profil run --jit: $all samples, $jit in JIT code, $named of them named, hotLoop $hot"
[ "$all" -ge 500 ] || { echo "too few samples"; exit 1; }
[ $((named * 100)) -ge $((jit * 95)) ] || { echo "fewer than 95 % of the JIT samples named"; head -8 "$dir/csv"; exit 1; }
# hotLoop's caller, the script's top level, is interpreted: named too
# (--interpreted-frames-native-stack), in >= 95 % of hotLoop's stacks.
"$profil" report --format folded "$dir/out/node.$pid.pb.gz" > "$dir/folded"
read -r called all_hot < <(awk '{ n = $NF; $NF = ""; k = split($0, f, ";");
  if (f[k] ~ /hotLoop/) { t += n; if (f[k - 1] ~ /hot\.js/) c += n } } END { print c + 0, t + 0 }' "$dir/folded")
echo "hotLoop called from hot.js's top level, named, in $called of its $all_hot stacks"
[ $((called * 100)) -ge $((all_hot * 95)) ] && [ "$all_hot" -gt 0 ] ||
  { echo "hotLoop's caller is not named"; grep hotLoop "$dir/folded" | head -3; exit 1; }

# --perf-prof: node writes jit-PID.dump (and an isolate log) where it runs.
mkdir "$dir/cwd"
(cd "$dir/cwd" && "$profil" run "$@" --hz 1000 -o "$dir/dump" -- node --perf-prof "$dir/hot.js" > /dev/null 2> "$dir/err") ||
  { cat "$dir/err"; exit 1; }
pid=$(ls "$dir/dump" | sed -n 's/^jit-\([0-9]*\)\.dump$/\1/p' | head -1)
[ -n "$pid" ] || { echo "no jit-PID.dump kept in the output directory:"; ls "$dir/dump" "$dir/cwd"; exit 1; }
rm -f "$dir/cwd/jit-$pid.dump"
"$profil" report --format csv "$dir/dump/node.$pid.pb.gz" > "$dir/dump.csv"
read -r dump_all dump_jit dump_named dump_hot < <(python3 "$here/jit_shares.py" "$dir/dump.csv" hotLoop)
echo "node --perf-prof: $dump_all samples, $dump_jit in JIT code, $dump_named of them named, hotLoop $dump_hot"
[ $((dump_named * 100)) -ge $((dump_jit * 95)) ] ||
  { echo "fewer than 95 % of the JIT samples named"; head -8 "$dir/dump.csv"; exit 1; }
# hotLoop's loop is line 6 of hot.js: its hottest line (a line table read
# 64 bytes off, jitdump.cc's kElfTextOffset, put it on line 7). node 20's
# V8 now and then writes a debug record's file names from memory it has
# not filled (1 to 3 of ~25 records a run, hotLoop's among them in 1 run
# of 3 or more): their entries give no line, never a garbage file name.
"$profil" report --by line --format csv "$dir/dump/node.$pid.pb.gz" > "$dir/lines.csv"
python3 - "$dir/lines.csv" "$dir/hot.js" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
for r in rows:
    if r["object"] == "[jit]" and r["file"] and any(ord(c) < 32 or ord(c) == 127 for c in r["file"]):
        sys.exit(f"a garbage file name: {r['file']!r} ({r['function']})")
lined = [r for r in rows if "hotLoop" in r["function"] and int(r["line"] or 0) > 0]
if not lined:
    print("V8 wrote no readable line for hotLoop this run")
    sys.exit(0)
where = max(lined, key=lambda r: int(r["samples"]))
print("hotLoop's hottest line:", {k: where[k] for k in ("samples", "file", "line")})
if where["file"] != sys.argv[2]:
    sys.exit(f"hotLoop's lines are not in {sys.argv[2]}")
line = int(where["line"])
sys.exit(0 if line == 6 else f"hotLoop's hottest line is {line}, not its loop's (6)")
PY

mkdir "$dir/perf"
set +e
perf_counts=$(cd "$dir/perf" && bash "$here/perf_leaf_share.sh" "$dir/perf" hotLoop node --perf-basic-prof "$dir/hot.js")
status=$?
set -e
[ $status -eq 77 ] && { echo "perf's part skipped: $perf_counts"; exit 0; }
[ $status -eq 0 ] || { echo "perf failed: $perf_counts"; exit 1; }
read -r perf_hot perf_all <<< "$perf_counts"
[ "$perf_all" -ge 500 ] || { echo "perf: too few samples ($perf_all)"; exit 1; }
# Within 4 standard errors of the difference of two binomial shares (a
# false alarm once in ~16,000 runs).
python3 - "$hot" "$all" "$perf_hot" "$perf_all" <<'PY'
import math, sys
h1, n1, h2, n2 = map(int, sys.argv[1:])
p1, p2 = h1 / n1, h2 / n2
se = math.sqrt(p1 * (1 - p1) / n1 + p2 * (1 - p2) / n2)
print(f"hotLoop's share      profil run --jit {100 * p1:5.1f} % of {n1}   perf record -g (node --perf-basic-prof) {100 * p2:5.1f} % of {n2}   difference {100 * (p1 - p2):+.1f} points, 4 SE = {400 * se:.1f}")
sys.exit(0 if abs(p1 - p2) <= 4 * se else 1)
PY
