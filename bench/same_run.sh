#!/usr/bin/env bash
# Issue 21's target "go build, sudo, su, a postgres server and xargs of 800
# short processes (as root): CPU in samples within 5 % of perf record's on
# the same run". Each workload runs twice:
#
#   perf record -a -e cpu-clock -c PERIOD -- profil run -o DIR -- same_run_cpu WORKLOAD
#   perf record -e task-clock -c PERIOD -- same_run_cpu WORKLOAD
#
# The first is the same run for both samplers: a busy machine (two cores
# shared with other builds) changes what the workload costs, not how two
# samplers of one run count it. perf samples every CPU on a timer of its
# own (system-wide, cpu-clock, fixed period: each sample stands for PERIOD
# ns); its samples are kept for the processes descended from profil run
# (the FORK records of perf.data), profil's own process excluded.
# profil's side is the sum of the run's files (profil report's
# cpu_seconds: samples x period). same_run_cpu.c, the witness, prints the
# CPU time the kernel accounted to the workload's processes (getrusage
# RUSAGE_CHILDREN): what both should find. No -g: totals need no stacks.
#
# The second run is perf record as it samples a command by default, per
# task and inherited — the events profil opens, on the same task-clock —
# against that run's own witness: a per-task perf record around profil run
# would have been the same run, but perf 6.1 cannot read the perf.data it
# then writes (an assertion in util/build-id.c).
#
# One row per workload: the witness's CPU, perf -a's, profil's, the
# ratios, profil's process count and perf's; then perf's per-task ratio to
# its run's witness. SAME_RUN_DETAIL=1 adds both samplers' CPU by process,
# to say where a gap is; SAME_RUN_KEEP=1 keeps the files; SAME_RUN_ONLY=NAME
# runs one workload. Needs root (sudo -u nobody, su nobody, postgres's own
# user, perf record -a) and perf.
set -uo pipefail
build=${1:-build}
profil=$(realpath "${PROFIL_TOOL:-$build/bin/profil}")
hz=${SAME_RUN_HZ:-500}
period=$((1000000000 / hz))
only=${SAME_RUN_ONLY:-}  # a workload's name: that one alone
echo "same_run: profil run (outside) vs perf record -a on the same run, $hz Hz"
if [ "$(id -u)" -ne 0 ]; then
  echo "same_run: skipped: needs root (sudo -u nobody, su nobody, postgres's own user, perf record -a)"
  exit 0
fi
command -v perf >/dev/null || { echo "same_run: skipped: perf is not installed (linux-perf)"; exit 0; }
work=$(mktemp -d "${TMPDIR:-/tmp}/profil-same-run.XXXXXX")
chmod 755 "$work"
[ -n "${SAME_RUN_KEEP:-}" ] || trap 'rm -rf "$work"' EXIT
[ -n "${SAME_RUN_KEEP:-}" ] && echo "same_run: keeping $work"
here=$(cd "$(dirname "$0")" && pwd)
witness=$work/same_run_cpu
cc -O2 -o "$witness" "$here/same_run_cpu.c" || { echo "same_run: cannot compile same_run_cpu.c"; exit 1; }

# perf's CPU (seconds) for the processes under profil run in a perf.data:
# those descended from the first process that exec'd profil below perf
# record's (pid $2; 0: any, a per-task perf.data holds nothing else) —
# not another profil run on the same machine; profil's own process left
# out. With detail, by process too.
perf_cpu() {
  perf script -i "$1" --show-task-events -F comm,pid,tid,period,event 2>/dev/null | python3 -c '
import re, sys, collections
detail, perf_pid = sys.argv[1] == "1", int(sys.argv[2])
fork = re.compile(r"PERF_RECORD_FORK\((\d+):(\d+)\):\((\d+):(\d+)\)")
comm_exec = re.compile(r"PERF_RECORD_COMM exec: profil:(\d+)/")
profils = []
sample = re.compile(r"^\s*(.*?)\s+(\d+)/(\d+)\s+(\d+)\s+(cpu|task)-clock")
parent, root, samples = {}, None, []
for line in sys.stdin:
    m = fork.search(line)
    if m:
        child, p = int(m.group(1)), int(m.group(3))
        if child != p: parent[child] = p
        continue
    m = comm_exec.search(line)
    if m:
        profils.append(int(m.group(1)))
        continue
    m = sample.match(line)
    if m: samples.append((m.group(1), int(m.group(2)), int(m.group(4))))
def descends(pid, ancestor):
    hops = 0
    while pid in parent and hops < 100000:
        pid = parent[pid]; hops += 1
        if pid == ancestor: return True
    return False
for pid in profils:
    if not perf_pid or descends(pid, perf_pid):
        root = pid
        break
seen = {}
def under_root(pid):
    if pid not in seen:
        p, ok, hops = pid, False, 0
        while p in parent and hops < 100000:
            p = parent[p]; hops += 1
            if p == root: ok = True; break
        seen[pid] = ok
    return seen[pid]
total, pids, by_process = 0, set(), collections.Counter()
for comm, pid, period in samples:
    if pid != root and under_root(pid):
        total += period; pids.add(pid); by_process["%s.%d" % (comm, pid)] += period
print("%.3f %d" % (total / 1e9, len(pids)))
if detail:
    for name, ns in by_process.most_common(16): print("   %s %-24s %8.3f s" % (sys.argv[3], name, ns / 1e9), file=sys.stderr)
' "${SAME_RUN_DETAIL:-0}" "$2" "$3"
}

# profil's CPU (seconds) in DIR's files, and the processes they hold.
profil_cpu() {
  local files=("$1"/*.pb.gz)
  [ -e "${files[0]}" ] || { echo "0 0"; return; }
  local s
  s=$("$profil" report --format json "${files[@]}" 2>/dev/null | grep -o '"cpu_seconds":[0-9.]*' | head -n 1 | cut -d: -f2)
  # The [unsampled: ...] rows (each ended thread's time after its last
  # sample, from the kernel's count at its exit): in cpu_seconds, not samples.
  local u
  u=$("$profil" report --format folded "${files[@]}" 2>/dev/null |
    awk -v p="$period" '/^\[unsampled: / { n += $NF } END { printf "%.3f", n * p / 1e9 }')
  s=$(echo "${s:-0} - $u" | bc -l)
  # Processes: a file each, and those summed in small.<pid>.pb.gz (said in
  # the run's line).
  local own shared
  own=$(ls "$1" | grep -c '\.pb\.gz$' | awk '{ print $1 }')
  shared=$(grep -o '([0-9]* processes of under' "$2" | grep -o '[0-9]*' | head -n 1)
  [ -n "$shared" ] && own=$((own - 1 + shared))
  echo "${s:-0} $own ${u:-0}"
  if [ "${SAME_RUN_DETAIL:-0}" = 1 ]; then
    for f in "${files[@]}"; do
      printf '   profil %-24s %8.3f s\n' "$(basename "$f" .pb.gz)" \
        "$("$profil" report --format json "$f" 2>/dev/null | grep -o '"cpu_seconds":[0-9.]*' | head -n 1 | cut -d: -f2)"
    done | sort -k3 -g -r | head -n 16 >&2
  fi
}

printf '%-9s %7s %7s %7s %8s %8s %8s %6s %6s %6s %8s %8s %8s  %s\n' workload "used s" "perf s" "profil" "/perf" "/used" "perf/used" "procs" "perf" \
  "used2 s" "perf-t/used2" "+unsamp" "all/used" load
# same_run NAME COMMAND...: the two runs of COMMAND; $before, when set,
# names a function run in the background beside each (a server's client).
before=
same_run() {
  local name=$1
  shift
  [ -n "$only" ] && [ "$only" != "$name" ] && return
  local d=$work/$name
  rm -rf "$d"
  mkdir -p "$d"
  local load
  load=$(cut -d' ' -f1 /proc/loadavg)
  local client=
  [ -n "$before" ] && { "$before" & client=$!; }
  # -B -N: no build ids (totals need none, and perf's end is shorter).
  perf record -q -B -N -a -e cpu-clock -c "$period" -o "$d/perf.data" -- \
    "$profil" run -o "$d/prof" -- "$witness" "$@" > "$d/stdout" 2> "$d/stderr" &
  local perf_pid=$!
  wait "$perf_pid"
  [ -n "$client" ] && wait "$client"
  # The second run: perf record per task.
  client=
  [ -n "$before" ] && { "$before" & client=$!; }
  perf record -q -B -N -e task-clock -c "$period" -o "$d/task.data" -- "$witness" "$@" > /dev/null 2> "$d/stderr2"
  [ -n "$client" ] && wait "$client"
  local pt used2
  # Every sample of the per-task file but the witness's own.
  pt=$(perf script -i "$d/task.data" -F comm,period 2>/dev/null | awk '$1 != "same_run_cpu" { s += $2 } END { printf "%.3f", s / 1e9 }')
  used2=$(awk '/^same_run_cpu/ { print $2 }' "$d/stderr2")
  local pa pap r rp used
  read -r pa pap < <(perf_cpu "$d/perf.data" "$perf_pid" perf)
  local ru
  read -r r rp ru < <(profil_cpu "$d/prof" "$d/stderr")
  used=$(awk '/^same_run_cpu/ { print $2 }' "$d/stderr")
  ratio() { echo "$1 / $2" | bc -l 2>/dev/null || echo 0; }
  printf '%-9s %7.3f %7.3f %7.3f %8.3f %8.3f %8.3f %6s %6s %6.3f %8.3f %8.3f %8.3f  %s\n' "$name" "${used:-0}" "$pa" "$r" \
    "$(ratio "$r" "$pa")" "$(ratio "$r" "${used:-0}")" "$(ratio "$pa" "${used:-0}")" "$rp" "$pap" \
    "${used2:-0}" "$(ratio "$pt" "${used2:-0}")" "$ru" "$(ratio "$(echo "$r + $ru" | bc -l)" "${used:-0}")" "$load"
  if [ "${SAME_RUN_DETAIL:-0}" = 1 ]; then
    grep '^profil:' "$d/stderr" | head -n 5 | sed 's/^/   /' >&2
  fi
}

# go build of a small module, standard library only, GOCACHE empty so that
# compile and link (static Go programs: no preload enters them) run.
gomod=$work/gomod
mkdir -p "$gomod"
printf 'module example.com/m\n\ngo 1.19\n' > "$gomod/go.mod"
for pkg in a b c d; do
  mkdir -p "$gomod/$pkg"
  {
    echo "package $pkg"
    echo 'import ("sort"; "strings"; "fmt")'
    for ((i = 0; i < 150; i++)); do
      echo "type T$i struct { A, B int; S string }"
      echo "func (t *T$i) Work(n int) string { xs := []int{}; for j := 0; j < n; j++ { xs = append(xs, (j*t.A+t.B)%97) }; sort.Ints(xs); return strings.Repeat(t.S, len(xs)%3) + fmt.Sprint(xs[:1]) }"
      echo "func F$i(n int) int { t := &T$i{A: n, B: $i, S: \"x\"}; return len(t.Work(n % 50 + 1)) }"
    done
  } > "$gomod/$pkg/$pkg.go"
done
cat > "$gomod/main.go" << 'EOF'
package main

import (
	"fmt"

	"example.com/m/a"
	"example.com/m/b"
	"example.com/m/c"
	"example.com/m/d"
)

func main() { fmt.Println(a.F1(3) + b.F2(4) + c.F3(5) + d.F4(6)) }
EOF
if command -v go >/dev/null; then
  # The cache emptied at the start of each run, inside it.
  same_run go-build sh -c 'rm -rf "$1" && cd "$2" &&
    GOCACHE="$1" GOPATH="$3" GOFLAGS= GOPROXY=off GOTOOLCHAIN=local exec go build -o "$4" .' \
    sh "$work/gocache" "$gomod" "$work/gopath" "$work/gomod.out"
else
  echo "go-build   (go is not installed: golang-go)"
fi

# A few seconds of a shell's CPU as user nobody, through sudo and su.
spin='i=0; while [ $i -lt 1500000 ]; do i=$((i+1)); done'
if command -v sudo >/dev/null; then
  same_run sudo sudo -u nobody sh -c "$spin"
else
  echo "sudo       (sudo is not installed)"
fi
same_run su su nobody -s /bin/sh -c "$spin"

# A postgres server under profil run, as its own user, driven from
# outside by pgbench (initialisation, then 5 s of its default
# transactions), stopped with pg_ctl: the server's processes on both sides.
pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
if [ -n "$only" ] && [ "$only" != postgres ]; then
  :
elif [ -n "$pgbin" ] && [ -x "$pgbin/postgres" ] && id postgres > /dev/null 2>&1; then
  pg=$work/pg
  mkdir -p "$pg"
  chown postgres "$pg"
  runuser -u postgres -- "$pgbin/initdb" -D "$pg/data" -A trust > "$pg/initdb.log" 2>&1
  port=$((54000 + RANDOM % 900))
  pgbench_run() {
    local i
    for ((i = 0; i < 100; i++)); do
      runuser -u postgres -- "$pgbin/pg_isready" -q -h "$pg" -p "$port" && break
      sleep 0.1
    done
    runuser -u postgres -- "$pgbin/pgbench" -q -i -h "$pg" -p "$port" postgres > "$pg/pgbench.log" 2>&1
    runuser -u postgres -- "$pgbin/pgbench" -c 2 -T 5 -h "$pg" -p "$port" postgres >> "$pg/pgbench.log" 2>&1
    runuser -u postgres -- "$pgbin/pg_ctl" stop -D "$pg/data" -m fast > /dev/null 2>&1
  }
  before=pgbench_run
  same_run postgres runuser -u postgres -- "$pgbin/postgres" -D "$pg/data" -k "$pg" -p "$port" -c listen_addresses=
  before=
  grep -q '^tps' "$pg/pgbench.log" || { echo "   (pgbench did not run:"; sed 's/^/   /' "$pg/pgbench.log" | tail -n 3; echo "   )"; }
else
  echo "postgres   (postgresql is not installed)"
fi

# ~800 short processes: 16,000 files of /usr/share counted 20 at a time,
# two at once.
same_run xargs sh -c 'find /usr/share -type f -print0 | head -z -n 16000 | xargs -0 -P2 -n 20 wc -l > /dev/null'
