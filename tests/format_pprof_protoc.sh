#!/usr/bin/env bash
# encode_pprof's output, decoded by protoc against pprof's own profile.proto:
# the mapping's filename and build_id, the function names (the symbolizer's
# and the profile's own) and the sample values [count, count * period] must
# be what format_make_pprof wrote.
#   format_pprof_protoc.sh <format_make_pprof> <protoc> <profile.proto>
set -euo pipefail
make_pprof=$1 protoc=$2 proto=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$make_pprof" "$work/profile.pb.gz"
# gzip magic, then a decodable message.
[ "$(head -c 2 "$work/profile.pb.gz" | od -An -tx1 | tr -d ' \n')" = 1f8b ] || { echo "not gzip"; exit 1; }
gunzip -c "$work/profile.pb.gz" |
  "$protoc" --decode=perftools.profiles.Profile --proto_path="$(dirname "$proto")" "$(basename "$proto")" \
  > "$work/decoded.txt"
cat "$work/decoded.txt"

# string_table entries, in order (index 0 first).
strings=()
while IFS= read -r line; do
  value=${line#string_table: \"}
  strings+=("${value%\"}")
done < <(grep '^string_table: ' "$work/decoded.txt")
[ "${strings[0]}" = "" ] || { echo "string_table[0] is not empty"; exit 1; }

# Field $2 inside the first top-level block $1 { ... }.
field() {
  awk -v block="$1" -v name="$2" '
    $0 == block " {" { inside = 1; next }
    inside && $0 == "}" { exit }
    inside && $1 == name ":" { print $2; exit }' "$work/decoded.txt"
}
expect() {  # expect <what> <actual> <expected>
  if [ "$2" != "$3" ]; then echo "FAIL: $1 is '$2', expected '$3'"; exit 1; fi
  echo "ok: $1 = $3"
}
expect "mapping filename" "${strings[$(field mapping filename)]}" "/opt/profil-test/bin/known-program"
expect "mapping build_id" "${strings[$(field mapping build_id)]}" "5eed0123456789abcdef"
expect "mapping memory_start" "$(field mapping memory_start)" 93824992231424   # 0x555555554000
expect "mapping has_functions" "$(field mapping has_functions)" true
expect "function name" "${strings[$(field function name)]}" "known_hot_function"
# Every function's name, in order: the symbolizer's, then the one the
# profile carried for the address the symbolizer could not name.
names=$(awk '$0 == "function {" { inside = 1; next } inside && $0 == "}" { inside = 0 } inside && $1 == "name:" { print $2 }' "$work/decoded.txt" |
  while read -r index; do printf '%s ' "${strings[$index]}"; done)
expect "function names" "$names" "known_hot_function carried_function "
expect "period" "$(grep '^period: ' "$work/decoded.txt" | awk '{print $2}')" 1000000
# The samples' values, in order: [37, 37 ms, 3 observations] and [5, 5 ms, 5].
values=$(awk '$0 == "sample {" { inside = 1; next } inside && $0 == "}" { inside = 0 } inside && $1 == "value:" { printf "%s ", $2 }' "$work/decoded.txt")
expect "sample values" "$values" "37 37000000 3 5 5000000 5 "
# The sample types: today's two, then observations/count (issue 22); pprof's
# default stays cpu.
types=$(awk '$0 == "sample_type {" { inside = 1; next } inside && $0 == "}" { inside = 0 } inside && ($1 == "type:" || $1 == "unit:") { print $2 }' "$work/decoded.txt" |
  while read -r index; do printf '%s ' "${strings[$index]}"; done)
expect "sample types" "$types" "samples count cpu nanoseconds observations count "
expect "default sample type" "${strings[$(grep '^default_sample_type: ' "$work/decoded.txt" | awk '{print $2}')]}" "cpu"
