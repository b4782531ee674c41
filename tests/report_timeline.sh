#!/usr/bin/env bash
# The timeline (issue 33): a program that runs phase_a for PHASE_MS of CPU
# time and then phase_b, profiled from outside, shows phase_a's samples
# before phase_b's
#  - in `profil report --format speedscope` (the JSON parsed here: each
#    thread's samples in time order, their weights adding up to the axis),
#  - in the same report over the --every snapshots of a run (times are
#    Unix epoch ns: several files merge in order),
#  - in the HTML page's flame chart (headless Chromium runs its script;
#    phase_a's frames lie left of phase_b's),
#  - and speedscope itself imports the file (its sandwich view lists both).
# go tool pprof still reads the pprof file with its time labels. A profile
# from inside has no times: the speedscope file and the page say so.
# Usage: report_timeline.sh PROFIL PROGRAM SPEEDSCOPE_RELEASE_DIR
set -euo pipefail
profil=$1 program=$2 speedscope=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
chromium=$(command -v chromium || command -v chromium-browser || true)
[ -n "$chromium" ] || fail "chromium missing (scripts/install-deps.sh installs it)"
. "$(dirname "$0")/server_work_dir.sh"
export PHASE_MS=600

if ! "$profil" run --outside --hz 500 -o out -- "$program" 2> run.err; then
  grep -q "outside" run.err && { echo "skipped: no sampling from outside here: $(head -1 run.err)"; exit 77; }
  cat run.err; fail "profil run --outside failed"
fi
"$profil" report --format speedscope -o app.speedscope.json out/*.pb.gz

# Phases in order: of the samples of either phase, those of phase_a taken
# after phase_b's first one (a sample at the boundary may hold either) are
# at most 2 % of them, or 2.
order_check() {
  /usr/bin/python3 - "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
names = [f["name"] for f in d["shared"]["frames"]]
checked = 0
for p in d["profiles"]:
    assert p["type"] == "sampled" and len(p["samples"]) == len(p["weights"]), "not a sampled profile"
    assert abs(sum(p["weights"]) - (p["endValue"] - p["startValue"])) <= len(p["weights"]), \
        "the weights do not span the axis: %d of %d" % (sum(p["weights"]), p["endValue"] - p["startValue"])
    phases = []
    for stack in p["samples"]:
        frames = {names[i] for i in stack}
        phases.append("a" if "phase_a" in frames else "b" if "phase_b" in frames else None)
    a = [i for i, x in enumerate(phases) if x == "a"]
    b = [i for i, x in enumerate(phases) if x == "b"]
    if not a or not b:
        continue
    late = sum(1 for i in a if i > b[0])
    print("%s: %d runs of phase_a, %d of phase_b, phase_a after phase_b's first: %d" % (p["name"], len(a), len(b), late))
    if late > max(2, 0.02 * (len(a) + len(b))):
        sys.exit("FAIL: phase_a's samples are not before phase_b's in %s" % p["name"])
    checked += 1
if checked == 0:
    sys.exit("FAIL: no thread with samples of both phases")
PY
}
order_check app.speedscope.json

# Snapshots: each file a window, the report over all of them in order.
"$profil" run --outside --hz 500 --every 250ms -o snaps -- "$program" 2> snaps.err || { cat snaps.err; fail "--every"; }
[ "$(ls snaps/*.pb.gz | wc -l)" -ge 3 ] || fail "fewer than 3 snapshots: $(ls snaps)"
"$profil" report --format speedscope -o snaps.speedscope.json snaps/*.pb.gz
order_check snaps.speedscope.json

# go tool pprof reads the file with its times.
if command -v go > /dev/null; then
  HOME=$work GOCACHE=$work/gocache PPROF_TMPDIR=$work go tool pprof -raw out/*.pb.gz > raw.txt 2> raw.err ||
    { cat raw.err; fail "go tool pprof does not read the file"; }
  grep -q "time_ns:\[" raw.txt || fail "go tool pprof shows no time_ns labels"
fi

# The HTML page's flame chart: phase_a's frames left of phase_b's.
"$profil" report --format html -o app.html out/*.pb.gz
timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking \
  --disable-component-update --disable-sync --user-data-dir="$work/chromium-profile" --window-size=1200,900 \
  --virtual-time-budget=10000 --dump-dom "file://$work/app.html" > app.dom 2> /dev/null || fail "chromium failed"
/usr/bin/python3 - app.dom <<'PY'
import re, sys
dom = open(sys.argv[1]).read()
at = dom.find('id="flame-charts"')
if at < 0 or 'data-ready="1"' not in dom[at:at + 200]:
    sys.exit("FAIL: the flame charts were not drawn")
x = {"phase_a": [], "phase_b": []}
for g in re.findall(r'<g [^>]*>', dom[at:]):
    name = re.search(r'name="([^"]*)"', g)
    move = re.search(r'translate\(([-\d.e]+),', g)
    width = re.search(r'width="([-\d.e]+)"', g)
    if name and move and width and name.group(1) in x:
        x[name.group(1)].append((float(move.group(1)), float(width.group(1))))
def centre(frames):
    total = sum(w for _, w in frames)
    return sum((x0 + w / 2) * w for x0, w in frames) / total if total else None
a, b = centre(x["phase_a"]), centre(x["phase_b"])
print("flame chart: phase_a centred at %s px, phase_b at %s px" % (a, b))
if a is None or b is None or not a < b:
    sys.exit("FAIL: phase_a is not left of phase_b in the flame chart")
PY

# speedscope imports the file: its sandwich view lists both phases.
. "$(dirname "$0")/speedscope_sandwich.sh"
speedscope_sandwich app.speedscope.json speedscope.dom
grep -q '>phase_a<' speedscope.dom && grep -q '>phase_b<' speedscope.dom ||
  fail "speedscope did not import the file: $(head -c 2000 speedscope.dom)"

# From inside: no times, said in the file, on stderr and on the page.
if "$profil" run --inside --hz 500 -o inside -- "$program" 2> inside.err; then
  "$profil" report --format speedscope -o inside.json inside/*.pb.gz 2> inside.report.err
  grep -q "no times in this profile" inside.json || fail "the inside's speedscope file does not say it has no times"
  grep -q "no times in this profile" inside.report.err || fail "report did not say the profile has no times"
  "$profil" report --format html -o inside.html inside/*.pb.gz
  grep -q 'id="flame-charts-none"' inside.html || fail "the inside's page does not say it has no times"
fi
echo "ok: phase_a before phase_b in speedscope's file, over snapshots and in the flame chart; speedscope imports it"
