#!/usr/bin/env bash
# One golden test of profil report / merge / diff. A case file holds lines
#   profile OUT [--as KIND] [--period NS] PROGRAM SPEC...   (report_make_profile)
#   run ARGS...                                             (profil ARGS, in the work dir)
#   cmd COMMAND...                                          (another tool, e.g. gprof; recorded too)
#   sh COMMAND                                              (bash, unrecorded, for damaging files)
# $FIXTURES in a line is the directory of the fixture programs.
# Every `run` appends "$ profil ARGS", its stdout, its stderr and "exit N"
# to the transcript, which must equal CASE.expected once the paths of the
# build and source trees are replaced by FIXTURES/ and SOURCE/, and build
# ids (the fixtures' change with the build tree's path) by BUILD-ID.
# UPDATE_GOLDEN=1 rewrites the expected file instead (review the diff!).
set -uo pipefail
profil=$1 maker=$2 fixtures=$3 source=$4 case_file=$5
expected=${case_file%.case}.expected
for tool in "$profil" "$maker"; do
  [ -x "$tool" ] || { echo "report_golden: $tool is not built" >&2; exit 1; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
export FIXTURES=$fixtures
transcript=$work/transcript
: > "$transcript"
normalise() { sed -e "s#$fixtures#FIXTURES#g" -e "s#$source#SOURCE#g" -e "s#$work/##g" -e 's/build id [0-9a-f]\{40\}/build id BUILD-ID/g'; }
while IFS= read -r line || [ -n "$line" ]; do
  case "$line" in
    ''|'#'*) continue ;;
    profile\ *)
      eval "set -- ${line#profile }"
      out=$1; shift
      opts=()
      while [ $# -gt 0 ] && [[ $1 == --* ]]; do opts+=("$1" "$2"); shift 2; done
      program=$1; shift
      "$maker" "${opts[@]}" "$out" "$fixtures/$program" "$@" || { echo "cannot make $out" >&2; exit 1; }
      ;;
    run\ *)
      eval "set -- ${line#run }"
      echo "\$ profil $*" | normalise >> "$transcript"
      NO_COLOR=1 "$profil" "$@" > out.txt 2> err.txt
      status=$?
      normalise < out.txt >> "$transcript"
      normalise < err.txt >> "$transcript"
      echo "exit $status" >> "$transcript"
      ;;
    cmd\ *)
      eval "set -- ${line#cmd }"
      echo "\$ $*" | normalise >> "$transcript"
      "$@" > out.txt 2> err.txt
      status=$?
      normalise < out.txt >> "$transcript"
      normalise < err.txt >> "$transcript"
      echo "exit $status" >> "$transcript"
      ;;
    sh\ *) bash -c "${line#sh }" || exit 1 ;;
    *) echo "bad case line: $line" >&2; exit 1 ;;
  esac
done < "$case_file"
if [ "${UPDATE_GOLDEN:-0}" = 1 ]; then
  cp "$transcript" "$expected"
  echo "updated $expected"
  exit 0
fi
diff -u "$expected" "$transcript"
