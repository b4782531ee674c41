#!/usr/bin/env bash
# profil report on real profiles whose program is gone or was rebuilt since
# (a profile copied to another machine): the names and lines `profil run`
# wrote into the pprof file are shown, row for row what the program itself
# gives, and the warning says where they came from; a program whose
# symbols changed since is not asked (the file named it completely) unless
# --symbolize force. A file written with
# --no-symbolize carries no names: its samples stay [unknown].
#   report_missing_program.sh <profil> <fixture dir>
set -euo pipefail
profil=$1 fixtures=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
report() { NO_COLOR=1 "$profil" report "$@"; }
# The header's second line names the input file; the rest must match.
rows() { tail -n +3 "$1"; }

cp "$fixtures/report_fixture_pie" prog
"$profil" run -o named -- "$work/prog" burn 3000 0 2>/dev/null
"$profil" run --no-symbolize -o bare -- "$work/prog" burn 1000 0 2>/dev/null
named=$(echo named/*.pb.gz) bare=$(echo bare/*.pb.gz)

for view in function line; do report --by $view "$named" > present.$view 2> present.$view.err; done
cat present.line
[ ! -s present.function.err ] || fail "warnings with the program present: $(cat present.function.err)"
grep -q ' hot_inner ' present.function || fail "hot_inner missing with the program present"
grep -q 'prog\.c:[0-9]* *hot_inner ' present.line || fail "hot_inner's line missing with the program present"

# The program's symbol renamed in place (objcopy keeps its build id): the
# file says it named the program completely (has_functions and
# has_inline_frames), so the views take its names, as pprof does, and do
# not ask the object; --symbolize force asks the object again.
cp prog prog.original
objcopy --redefine-sym hot_inner=renamed_inner prog
for view in function line; do
  report --by $view "$named" > renamed.$view 2> renamed.$view.err
  cmp present.$view renamed.$view || { diff present.$view renamed.$view; fail "--by $view: names not from the file"; }
  [ ! -s renamed.$view.err ] || fail "warnings with the names in the file: $(cat renamed.$view.err)"
done
report --symbolize force "$named" > forced.function 2>/dev/null
grep -q ' renamed_inner ' forced.function || { cat forced.function; fail "--symbolize force did not read the object"; }
! grep -q ' hot_inner ' forced.function || fail "--symbolize force kept the file's name"
mv prog.original prog

rm prog
for view in function line; do
  report --by $view "$named" > gone.$view 2> gone.$view.err
  cmp present.$view gone.$view || { diff present.$view gone.$view; fail "--by $view differs without the program"; }
  grep -qF "$work/prog: No such file or directory; names come from the profile file" gone.$view.err ||
    fail "no warning naming the profile as the source: $(cat gone.$view.err)"
done
# Written again without the program (report --format pprof, merge), the
# names stay in the file.
report --format pprof -o again.pb.gz "$named" 2>/dev/null
"$profil" merge -o merged.pb.gz "$named" 2>/dev/null
for file in again.pb.gz merged.pb.gz; do
  report --by line "$file" > rewritten.line 2>/dev/null
  [ "$(rows rewritten.line)" = "$(rows present.line)" ] || { cat rewritten.line; fail "$file lost names"; }
done

# Another program at the same path: its build id differs, so its symbols
# would name the wrong code; the file's names are used.
cp "$fixtures/report_fixture_nopie" prog
report "$named" > rebuilt.function 2> rebuilt.err
cmp present.function rebuilt.function || { diff present.function rebuilt.function; fail "rebuilt program's names used"; }
grep -q "build id .* differs .*; names come from the profile file" rebuilt.err || fail "no build id warning: $(cat rebuilt.err)"

rm prog
report "$bare" > bare.function 2> bare.err
cat bare.function bare.err
! grep -q hot_inner bare.function || fail "names without any source"
grep -q '\[unknown\] *prog' bare.function || fail "unnamed samples not [unknown] in their object"
grep -qF "$work/prog: No such file or directory; its samples are shown as [unknown]" bare.err || fail "no [unknown] warning"
echo "names from the profile file without the program"
