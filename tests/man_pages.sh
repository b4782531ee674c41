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
# - every page's .TH names "profil VERSION";
# - profil(1) lists every command `profil --help` lists, in its SYNOPSIS
#   (".B profil COMMAND") and its COMMANDS (".B COMMAND"), and every
#   option of each command's --help (but --help) is in the command's page,
#   in its SYNOPSIS and described after it (issue 35: the options are read
#   from --help, so a new one fails here until its page has it).
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
# Option words in a page's roff as --help prints them: "\-" is "-", font
# changes go.
plain() { sed 's/\\-/-/g; s/\\f[BIRP]//g; s/\\(em/ /g' "$1"; }
# has_word TEXT_FILE WORD: WORD stands alone (not inside a longer option).
has_word() { grep -q -E -- "(^|[^a-zA-Z0-9-])$2([^a-zA-Z0-9-]|\$)" "$1"; }
scratch=$(mktemp -d) || exit 1
trap 'rm -rf "$scratch"' EXIT
main_page=$scratch/profil.1
plain man1/profil.1 > "$main_page"
sed -n '/^\.SH SYNOPSIS/,/^\.SH DESCRIPTION/p' "$main_page" > "$main_page.usage"
sed -n '/^\.SH COMMANDS/,/^\.SH OPTIONS/p' "$main_page" > "$main_page.commands"
for command in $commands; do
  grep -q -E "^\.B profil $command( |\$)" "$main_page.usage" ||
    fail "man1/profil.1: the SYNOPSIS has no '.B profil $command' line"
  grep -q -x "\.B $command" "$main_page.commands" || fail "man1/profil.1: COMMANDS does not list $command ('.B $command')"
  page=man1/profil-$command.1
  [ -f "$page" ] || continue
  plain "$page" > "$main_page.page"
  sed -n '/^\.SH SYNOPSIS/,/^\.SH DESCRIPTION/p' "$main_page.page" > "$main_page.synopsis"
  sed '/^\.SH SYNOPSIS/,/^\.SH DESCRIPTION/d' "$main_page.page" > "$main_page.described"
  # One line of --help per option: its names, "-o,--output".
  options=$("$profil" "$command" --help | sed -n '/^Options:/,/^[^ ]/p' | sed -n 's/^  \(-[^ ]*\).*/\1/p')
  [ -n "$options" ] || fail "profil $command --help lists no option"
  for names in $options; do
    case $names in -h,--help) continue ;; esac
    in_synopsis=
    for option in $(echo "$names" | tr ',' ' '); do
      has_word "$main_page.synopsis" "$option" && in_synopsis=1
      has_word "$main_page.described" "$option" || fail "$page: $option is not described (profil $command --help has it)"
    done
    [ -n "$in_synopsis" ] || fail "$page: the SYNOPSIS lacks $names (profil $command --help has it)"
  done
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
