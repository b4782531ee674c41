#!/usr/bin/env bash
# make demo: profile the bundled example program (examples/run_demo.cc: hot
# functions, a worker thread, a shared library) with `profil run`, unmodified,
# print `profil report` of what it wrote, and end by writing the report as an
# HTML page that opens with its flame graph. Builds nothing: the Makefile did.
set -euo pipefail
build=${1:-build}
profil=$build/bin/profil
out=$(mktemp -d "${TMPDIR:-/tmp}/profil-demo.XXXXXX")
trap 'rm -rf "$out"' EXIT

echo "\$ profil run -o $out -- $build/bin/run_demo"
"$profil" run -o "$out" -- "$build/bin/run_demo" 2>&1
echo
echo "\$ profil report $out/*.pb.gz"
"$profil" report "$out"/*.pb.gz
echo
echo "\$ profil report --by object $out/*.pb.gz"
"$profil" report --by object "$out"/*.pb.gz
echo
echo "\$ profil report --format tree --min-percent 2 $out/*.pb.gz"
"$profil" report --format tree --min-percent 2 "$out"/*.pb.gz
echo
page=$(realpath "$build")/profil-demo.html
echo "\$ profil report --format html -o $page $out/*.pb.gz"
"$profil" report --format html -o "$page" "$out"/*.pb.gz
echo "The flame graph: $page (open it in a browser; it works offline)"
