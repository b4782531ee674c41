#!/usr/bin/env bash
# A Go program that profiles itself with runtime/pprof (progs/gopprof): Go's
# profiler owns SIGPROF and per-thread CPU timers. Built here with go build,
# offline, as a cgo program: a pure-Go binary is static and cannot be
# preloaded (profil run could only say so), while a cgo one is dynamic like
# many real Go programs. Its own profile (cpu.pprof, which profil report
# reads) must account for its CPU time as it does without profil, and
# profil must write the program's own profile although Go ends with a raw
# exit_group system call (runtime.exit), not glibc's exit.
source "$(dirname "$0")/../lib.sh"
need go "${CC:-cc}"
export GOCACHE=$work/gocache GOPATH=$work/gopath GO111MODULE=off GOFLAGS= GOTOOLCHAIN=local CGO_ENABLED=1
mkdir -p "$work/build"
cp "$case_dir/progs/gopprof/main.go" "$work/build/"
(cd "$work/build" && go build -o "$work/in/gopprof" main.go) || { echo "FAIL [$case_name]: go build failed" >&2; exit 1; }
readelf -lW "$work/in/gopprof" | grep -q 'Requesting program interpreter' ||
  { echo "FAIL [$case_name]: the cgo build is not dynamically linked" >&2; exit 1; }

compare go_runtime_pprof -- ./gopprof
# Each run's own profile against the CPU time of that same run.
for side in plain prof; do
  dir=$work/go_runtime_pprof/$side
  [ $side = plain ] && used_ms=$plain_cpu_ms || used_ms=$prof_cpu_ms
  if [ ! -s "$dir/cpu.pprof" ]; then
    fail "the Go program wrote no cpu.pprof ($side run)"
    continue
  fi
  go_ms=$("$PROFIL" report --format json "$dir/cpu.pprof" | json_number cpu_seconds | awk '{ printf "%d", $1 * 1000 }')
  echo "  Go's own profile ($side run): $go_ms ms of CPU; the program used $used_ms ms"
  # Go samples at 100 Hz: ~150 samples; 25 % covers its tick-bound timers
  # on a busy machine.
  awk -v g="$go_ms" -v m="$used_ms" 'BEGIN { exit !(g >= 0.75 * m && g <= 1.25 * m) }' ||
    fail "Go's own profile ($side run) accounts for $go_ms ms, the program used $used_ms ms"
done
finish
