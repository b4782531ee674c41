#!/usr/bin/env bash
# npm ci of what a directory's package-lock.json pins, into a work directory
# of the build tree (never the source tree). Any failure is one line on
# stderr naming what was being installed, npm's reason and its log, and
# exit status 1. Used by build.sh (the HTML report's flame graph) and by the
# tests' consumers (web/consumers: speedscope).
#
#   npm_ci.sh PACKAGE_DIR WORK_DIR WHAT
set -uo pipefail
package=$1 work=$2 what=$3
fail() { echo "profil: $*" >&2; exit 1; }
for tool in npm node; do
  command -v "$tool" > /dev/null ||
    fail "$tool not found: $what is installed from npm at build time; scripts/install-deps.sh installs nodejs and npm"
done
mkdir -p "$work" || fail "cannot create $work"
cp "$package/package.json" "$package/package-lock.json" "$work/" ||
  fail "cannot copy $package/package.json and package-lock.json to $work"
log=$work/npm-ci.log
# --ignore-scripts: the packages are plain JavaScript and need no install
# scripts; none runs on the build machine.
if ! (cd "$work" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) > "$log" 2>&1; then
  # npm's first line that says what went wrong, past its code/errno lines.
  reason=$(grep -E '^npm (ERR!|error) ' "$log" | grep -v -E '^npm (ERR!|error) +(code|errno|syscall|path) ' |
    head -n 1 | sed -E 's/^npm (ERR!|error) +//')
  fail "npm ci failed for $what ($package/package-lock.json): ${reason:-see $log} (log: $log)"
fi
