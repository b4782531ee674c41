#!/bin/sh
# The conventions every profil command shares (issue 10): a usage error is
# one line on stderr, nothing on stdout, and a documented status — 125 for
# `profil run` (as env(1) and timeout(1), so it cannot be taken for the
# program's status), 2 for report, merge and diff; --version prints
# "profil PROJECT_VERSION"; --help shows no CLI11 artefacts.
# usage: cli_usage.sh PROFIL VERSION
profil=$1
version=$2
failures=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

expect() {
  status=$1
  shift
  "$profil" "$@" >"$tmp/out" 2>"$tmp/err"
  got=$?
  lines=$(wc -l <"$tmp/err")
  if [ "$got" != "$status" ] || [ "$lines" != 1 ] || [ -s "$tmp/out" ]; then
    echo "FAIL: profil $*: status $got (want $status), $lines stderr lines (want 1):"
    cat "$tmp/err" "$tmp/out"
    failures=$((failures + 1))
  fi
}

expect 125 run --no-such-option /bin/true
expect 125 run --hz 0 /bin/true
expect 125 run
# A duration too long to count in nanoseconds is a usage error naming the
# limit (issue 32: from about 9.2e9 s on, sampling stopped after 0.15 s).
expect 125 run --duration 1e10 /bin/true
expect 1 attach --duration 2562048h 1
grep -q "1e9 s" "$tmp/err" || { echo "FAIL: the duration's limit is not named:"; cat "$tmp/err"; failures=$((failures + 1)); }
expect 2 report --no-such-option x.pb.gz
expect 2 report
expect 2 report --format nonsense x.pb.gz
expect 2 merge x.pb.gz
expect 2 diff only-one.pb.gz
expect 2 no-such-command
expect 2

# A bad PROFIL_HZ, PROFIL_CLOCK or PROFIL_STACKS is one warning line naming the variable,
# the value and what is used instead, and the run goes on (base/settings.h:
# the rule the library follows too).
warns() {
  variable=$1
  want=$2
  env "$variable" "$profil" run -o "$tmp/o" -- /bin/true >"$tmp/out" 2>"$tmp/err"
  got=$?
  if [ "$got" != 0 ] || ! grep -q "^profil: warning: ${variable%%=*}: '${variable#*=}' .*; using $want\$" "$tmp/err"; then
    echo "FAIL: $variable profil run -- /bin/true: status $got (want 0), no warning 'using $want':"
    cat "$tmp/err"
    failures=$((failures + 1))
  fi
}
warns PROFIL_HZ=abc 500
warns PROFIL_HZ=0 500
warns PROFIL_CLOCK=fast auto
warns PROFIL_STACKS=maybe 1

# Stacks are on unless --no-stacks (or PROFIL_STACKS=0) says otherwise; the
# program's environment carries the choice to the preload.
for case in "1:" "0:--no-stacks" "0:PROFIL_STACKS=0" "1:PROFIL_STACKS=1"; do
  want=${case%%:*}
  how=${case#*:}
  case $how in
    PROFIL_*) got=$(env "$how" "$profil" run -o "$tmp/o" -- /bin/sh -c 'echo "$PROFIL_STACKS"' 2>/dev/null) ;;
    *) got=$("$profil" run -o "$tmp/o" $how -- /bin/sh -c 'echo "$PROFIL_STACKS"' 2>/dev/null) ;;
  esac
  if [ "$got" != "$want" ]; then
    echo "FAIL: profil run $how: the program saw PROFIL_STACKS='$got', not '$want'"
    failures=$((failures + 1))
  fi
done

out=$("$profil" --version)
if [ "$out" != "profil $version" ]; then
  echo "FAIL: profil --version printed '$out', not 'profil $version'"
  failures=$((failures + 1))
fi
for command in run report merge diff; do
  if "$profil" "$command" --help | grep -q '{false}\|{true}'; then
    echo "FAIL: profil $command --help shows CLI11's {false}/{true}"
    failures=$((failures + 1))
  fi
done
exit $failures
