#!/bin/sh
# The manual pages are complete and clean (issue 10):
# - every page renders without a warning (groff -ww: all warnings), an alias
#   through its .so;
# - every page but an alias passes `mandoc -T lint -W warning`: messages of
#   level WARNING, ERROR and UNSUPP fail, STYLE ones (an input line longer
#   than 80 bytes, which a NAME line listing five functions must be) pass;
# - an alias page is one `.so manN/PAGE.N` line naming a page that exists
#   and is not itself an alias (man-db follows one level);
# - every function a man3 NAME line lists has a page, so `man sprofil` finds
#   profil(3);
# - every command `profil --help` lists has its profil-COMMAND(1), and
#   profil(1) exists;
# - a command's page lists the formats its --help lists (the table in
#   tools/profil/formats.cc): the same names in the same order in the
#   SYNOPSIS, and each on a line of its own (`.B NAME`) where it is described;
# - every page's .TH names "profil VERSION".
# usage: man_pages.sh DIR PROFIL VERSION
dir=$1
profil=$(realpath "$2") || exit 1
version=$3
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
is_alias() { head -n 1 "$1" | grep -q '^\.so '; }

cd "$dir" || exit 1
for page in man*/*.[0-9]; do
  # Run from DIR: groff resolves .so against the working directory.
  warnings=$(groff -man -ww -z "$page" 2>&1)
  [ -z "$warnings" ] || fail "groff -ww $page: $warnings"
  if is_alias "$page"; then
    target=$(sed -n 's/^\.so //p' "$page")
    [ "$(wc -l <"$page")" = 1 ] || fail "$page: an alias page is one .so line"
    case $target in
      man[0-9]/*.[0-9]) ;;
      *) fail "$page: .so $target is not manN/PAGE.N" ;;
    esac
    if [ ! -f "$target" ]; then
      fail "$page: .so $target: no such page"
    elif is_alias "$target"; then
      fail "$page: .so $target: the target is an alias too"
    fi
    continue
  fi
  lint=$(mandoc -T lint -W warning "$page" 2>&1)
  [ -z "$lint" ] || fail "mandoc -T lint $page: $lint"
  th=$(sed -n 's/^\.TH [^"]*"\([^"]*\)".*/\1/p' "$page")
  [ "$th" = "profil $version" ] || fail "$page: .TH says '$th', not 'profil $version'"
done

# The NAME line: "name1, name2, ... \- what they do".
for page in man3/*.3; do
  is_alias "$page" && continue
  names=$(sed -n '/^\.SH NAME/{n;p;q}' "$page" | sed 's/ *\\-.*//; s/,/ /g')
  [ -n "$names" ] || fail "$page: no NAME line"
  for name in $names; do
    [ -f "man3/$name.3" ] || fail "$page names $name, but man3/$name.3 does not exist"
  done
done

[ -f man1/profil.1 ] || fail "no profil(1)"
commands=$("$profil" --help | sed -n '/^Subcommands:/,$p' | sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p')
[ -n "$commands" ] || fail "profil --help lists no command"
for command in $commands; do
  [ -f "man1/profil-$command.1" ] || fail "profil --help lists $command, but man1/profil-$command.1 does not exist"
done
for command in $commands; do
  formats=$("$profil" "$command" --help | sed -n '/^Formats:/,$p' | sed -n 's/^  \([a-z][a-z0-9-]*\) .*/\1/p')
  [ -n "$formats" ] || continue
  page=man1/profil-$command.1
  want=$(echo $formats | tr ' ' '|')
  got=$(sed -n 's/^\.RB \[ \\-\\-format " \([^]]*\)\]"$/\1/p' "$page")
  [ "$got" = "$want" ] || fail "$page: SYNOPSIS lists formats '$got', profil $command --help '$want'"
  for format in $formats; do
    grep -qx "\.B $format" "$page" || fail "$page: the format $format is not described (no '.B $format' line)"
  done
done
exit $failures
