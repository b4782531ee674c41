#!/usr/bin/env bash
# make bench: runs every benchmark script in bench/ against the build.
set -euo pipefail
build=${1:-build}
here=$(dirname "$0")
for script in "$here"/*.sh; do
  [ "$(basename "$script")" = run.sh ] && continue
  bash "$script" "$build"
  echo
done
