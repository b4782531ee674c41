#!/usr/bin/env bash
# speedscope (https://www.speedscope.app, from npm: web/consumers) reads
# profil report --format folded: a profile of known stacks is written as
# folded lines, speedscope loads them in headless Chromium, and its sandwich
# view's table (every function's total and self samples, as speedscope
# computed them from the stacks) equals profil's own rows (cumulative and
# self samples of --format csv).
#   report_speedscope.sh <profil> <report_make_profile> <fixture> <speedscope release dir>
set -euo pipefail
profil=$1 make_profile=$2 fixture=$3 speedscope=$4
fail() { echo "FAIL: $*" >&2; exit 1; }
chromium=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$chromium" ] || fail "chromium missing (scripts/install-deps.sh installs it)"
[ -f "$speedscope/index.html" ] || fail "speedscope missing at $speedscope (the web_consumers target installs it)"
. "$(dirname "$0")/server_work_dir.sh"

# Stacks leaf first ("<-"), with their samples; +8 an address inside hot_inner.
"$make_profile" app.profraw "$fixture" 'hot_inner<-hot_outer<-main=600' 'hot_inner+8<-hot_outer<-main=100' \
  'hot_outer<-main=300' 'local_helper<-main=50' 'hot_inner<-local_helper<-main=40' 'main=30'
NO_COLOR=1 "$profil" report --format folded -o app.folded app.profraw
NO_COLOR=1 "$profil" report --format csv -o app.csv app.profraw
. "$(dirname "$0")/speedscope_sandwich.sh"
speedscope_sandwich app.folded dom.html

/usr/bin/python3 - dom.html app.csv <<'PY'
import csv, html, re, sys
dom = open(sys.argv[1]).read()
# The sandwich table's rows: total, self and the symbol name.
# Counts are written with thousands separators ("1,120 (100%)").
rows = re.findall(r'<tr[^>]*><td[^>]*>([\d,]+) \([^<]*<div[\s\S]*?</td><td[^>]*>([\d,]+) \([^<]*<div[\s\S]*?</td>'
                  r'<td[^>]*><span[^>]*></span>([^<]*)</td></tr>', dom)
number = lambda text: int(text.replace(",", ""))
seen = {html.unescape(name): (number(total), number(self)) for total, self, name in rows}
if not seen:
    sys.exit("FAIL: speedscope showed no table:\n" + dom[:3000])
ours = {}
with open(sys.argv[2]) as f:
    for row in csv.DictReader(f):
        ours[row["function"]] = (int(row["cumulative_samples"]), int(row["samples"]))
print("speedscope:", sorted(seen.items()))
print("profil:    ", sorted(ours.items()))
if seen != ours:
    sys.exit("FAIL: speedscope's totals and self samples differ from profil's")
PY
echo "speedscope read the folded output: every function's total and self samples agree"
