#!/usr/bin/env bash
# One truth in every file (issue 35): the pprof file profil run writes
# names the same frames as profil report shows, so `go tool pprof -top`
# and `profil report` on that file give the same functions with the same
# self samples, row for row. The program spends its time in its own
# inlined functions and in libm's sincos, whose inlined functions
# (do_sin, do_cos, ...) only libc6-dbg's debug file names; a version-named
# symbol (__libc_start_main@@GLIBC_2.34) is on every stack.
#   report_pprof_agrees.sh <profil> <sincos fixture>
set -euo pipefail
profil=$1 program=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v go > /dev/null || { echo "go missing (golang-go): skipped"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
# go tool pprof reads a file offline; its caches and settings kept here.
export HOME=$work GOCACHE=$work/gocache GOPATH=$work/gopath GOFLAGS= GOTOOLCHAIN=local GOPROXY=off PPROF_TMPDIR=$work

"$profil" run --hz 1000 -o . -- "$program" 6000000 > run.out 2> run.err || fail "profil run: $(cat run.err)"
file=$(ls ./*.pb.gz)
[ "$(echo "$file" | wc -l)" = 1 ] || fail "one file expected: $file"

# Every function of each, self samples first; pprof's sample index
# "samples" (counts, not nanoseconds), no node dropped.
go tool pprof -top -nodecount=100000 -nodefraction=0 -edgefraction=0 -sample_index=samples "$file" \
  > pprof.txt 2> pprof.err || fail "go tool pprof: $(cat pprof.err)"
NO_COLOR=1 "$profil" report --format json "$file" > report.json 2> report.err || fail "profil report: $(cat report.err)"

/usr/bin/python3 - pprof.txt report.json <<'PY' || exit 1
import json, re, sys
pprof, report = sys.argv[1], sys.argv[2]
rows = {}
started = False
for line in open(pprof):
    if re.match(r"\s*flat\s+flat%", line):
        started = True
        continue
    if not started or not line.strip():
        continue
    fields = line.split()
    name = " ".join(fields[5:])
    if name.endswith(" (inline)"):
        name = name[: -len(" (inline)")]
    # Each tool's word for what has no name: pprof prints an unnamed
    # location's address, profil one [unknown] row; profil lists a stack
    # cut short ([truncated], no function) under no row.
    if re.fullmatch(r"0x[0-9a-f]+", name):
        name = "[unknown]"
    if name == "[truncated]":
        continue
    rows[name] = rows.get(name, 0) + int(fields[0])
profil = {}
for row in json.load(open(report))["rows"]:
    profil[row["function"]] = profil.get(row["function"], 0) + row["samples"]
total = sum(profil.values())

def top(table):
    # The 20 with most self samples, ties by name: both tools order ties
    # their own way.
    return sorted(table.items(), key=lambda kv: (-kv[1], kv[0]))[:20]

names = [n for n, _ in top(profil)]
print("%-40s %8s %8s" % ("function", "pprof", "profil"))
for name in names:
    print("%-40s %8s %8d" % (name, rows.get(name, "-"), profil[name]))
bad = []
if top(rows) != top(profil):
    bad.append("the top 20 differ:\n  pprof  %s\n  profil %s" % (top(rows), top(profil)))
for name in rows:
    if "@" in name:
        bad.append("a symbol version in pprof's name " + name)
if sum(rows.values()) != total:
    bad.append("pprof counts %d samples, profil %d" % (sum(rows.values()), total))
# What makes the test: inline frames of the program and of libm's debug
# file. Rows of no self sample are listed by both (their total is not 0):
# __sincos_fma's own 2-5 % could be 0 in a short run, its inlined
# functions' 15-20 % together cannot (0.8^180 samples).
for needed in ("poly", "mix", "__sincos_fma", "work", "__libc_start_main"):
    if needed not in profil or needed not in rows:
        bad.append(needed + " is not a row of both")
if not any(profil.get(n, 0) > 0 for n in ("do_sin", "do_cos", "reduce_sincos", "libc_feholdsetround_sse_ctx")):
    bad.append("no inline frame of libm (libc6-dbg's debug file) has samples")
if bad:
    print("FAIL: " + "\n      ".join(bad), file=sys.stderr)
    sys.exit(1)
print("the same %d functions, %d samples" % (len(rows), total))
PY
