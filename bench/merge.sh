#!/usr/bin/env bash
# profil merge against go tool pprof -proto (issue 23): the sum of 100,
# 1,000 and 10,000 profiles with stacks, each tool on the same files in
# turn, CPU time, elapsed time and peak RSS from /usr/bin/time. The inputs
# are one real profile (profil run of python3, stacks unwound) copied with
# other pids, as a fleet of processes of one program writes them; each
# copy is its own process, so the sum keeps each one's samples apart (pid
# labels) and counts the processes.
#
#   bash bench/merge.sh BUILD [COUNTS...]     (default counts: 100 1000 10000)
# BENCH_RUNS (default 3) runs of each tool at each count, alternating;
# the table gives the least and the most of each figure.
set -euo pipefail
build=${1:-build}
shift || true
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(100 1000 10000)
runs=${BENCH_RUNS:-3}
profil=$(cd "$build/bin" && pwd)/profil
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== merge: profil merge vs go tool pprof -proto, profiles with stacks, $runs runs each =="
if ! [ -x /usr/bin/time ]; then
  echo "skipped: /usr/bin/time is not installed (Debian: time)"
  exit 0
fi
have_go=1
command -v go > /dev/null || have_go=0

# One real profile: python3 at 4 kHz for about 0.8 s of CPU (some 3,000
# samples, 900 distinct stacks: the issue's 3.6k-sample profile).
python=$(readlink -f "$(command -v python3)")
case "$python" in *pyenv*) python=/usr/bin/python3 ;; esac  # a shim is a shell script
"$profil" run --hz 4000 -o "$work/run" -- "$python" -c '
import json
def leaf(n):
    return sum(i * i for i in range(n))
def middle(n):
    return [leaf(n) for _ in range(20)]
def outer():
    for k in range(300):
        middle(300 + k)
    d = [{"a": i, "b": str(i)} for i in range(100000)]
    json.loads(json.dumps(d))
outer()
' > /dev/null 2> "$work/run.log" || { cat "$work/run.log"; exit 1; }
source=$(ls -S "$work"/run/*.pb.gz | head -1)  # python3's, the largest

# Copies with other pids: the "profil.pid=N" comment is a top-level
# string_table field (tag 0x32, one length byte), rewritten whole.
max=0
for n in "${counts[@]}"; do [ "$n" -gt "$max" ] && max=$n; done
mkdir -p "$work/in"
python3 - "$source" "$work/in" "$max" <<'PY'
import gzip, re, sys
source, out, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
raw = gzip.decompress(open(source, 'rb').read())
field = re.search(rb'\x32(.)profil\.pid=', raw, re.S)
if not field:
    sys.exit('no profil.pid comment in ' + source)
start, end = field.start(), field.start() + 2 + field.group(1)[0]  # the length byte says where it ends
for i in range(count):
    text = b'profil.pid=%d' % (100000 + i)
    copy = raw[:start] + b'\x32' + bytes([len(text)]) + text + raw[end:]
    with open('%s/p%05d.pb.gz' % (out, i), 'wb') as f:
        f.write(gzip.compress(copy, 6))
PY
samples=$("$profil" report --format csv "$source" | awk -F, 'NR > 1 { s += $1 } END { print s }')
echo "input: one python3 profile ($(stat -c %s "$source") bytes, $samples samples at 4 kHz), copied with other pids"

# "elapsed user sys maxrss_kb" of one run.
measure() {
  /usr/bin/time -f '%e %U %S %M' -o "$work/time" "$@" > /dev/null 2> "$work/err" || {
    echo "failed: $*" >&2
    cat "$work/err" >&2
    return 1
  }
  tail -1 "$work/time"
}
# "min – max" of a column of numbers (one number when they agree).
spread() { sort -n | awk 'NR == 1 { lo = $1 } { hi = $1 } END { print (lo == hi ? lo : lo " – " hi) }'; }

printf '\n| inputs | command | CPU s (user+sys) | elapsed s | peak RSS MB |\n|---|---|---|---|---|\n'
cd "$work/in"
export HOME=$work GOCACHE=$work/gocache
all=(p*.pb.gz)
for n in "${counts[@]}"; do
  files=("${all[@]:0:n}")
  : > "$work/profil.$n"
  : > "$work/go.$n"
  for ((r = 0; r < runs; ++r)); do
    measure "$profil" merge -o "$work/sum.pb.gz" "${files[@]}" >> "$work/profil.$n"
    if [ $have_go = 1 ]; then
      measure go tool pprof -proto "${files[@]}" >> "$work/go.$n"
    fi
  done
  for tool in profil go; do
    [ -s "$work/$tool.$n" ] || continue
    cpu=$(awk '{ printf "%.2f\n", $2 + $3 }' "$work/$tool.$n" | spread)
    wall=$(awk '{ print $1 }' "$work/$tool.$n" | spread)
    rss=$(awk '{ printf "%.0f\n", $4 / 1024 }' "$work/$tool.$n" | spread)
    name="profil merge"
    [ $tool = go ] && name="go tool pprof -proto"
    printf '| %s | %s | %s | %s | %s |\n' "$n" "$name" "$cpu" "$wall" "$rss"
  done
done
sum=$("$profil" report --format csv "$work/sum.pb.gz" | awk -F, 'NR > 1 { s += $1 } END { print s }')
echo
echo "the last sum: $sum samples ($(stat -c %s "$work/sum.pb.gz") bytes); min – max of $runs runs; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
