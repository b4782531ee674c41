#!/usr/bin/env bash
# make bench: runs every benchmark in bench/ against the build: each *.sh
# script (but this one) with bash, and each other executable file, in name
# order, with the build directory as their argument. Add yours by dropping
# it here.
set -euo pipefail
build=${1:-build}
here=$(dirname "$0")
for item in "$here"/*; do
  name=$(basename "$item")
  [ "$name" = run.sh ] && continue
  if [[ $name == *.sh ]]; then
    bash "$item" "$build"
  elif [ -f "$item" ] && [ -x "$item" ]; then
    "$item" "$build"
  else
    continue
  fi
  echo
done
