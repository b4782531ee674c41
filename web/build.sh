#!/usr/bin/env bash
# The build step behind src/report/CMakeLists.txt's flame_graph_assets.cc:
# npm ci installs what web/package-lock.json pins into the build tree (never
# the source tree), then bundle.mjs joins the browser builds into OUT_JS and
# writes them as the C++ source OUT_CC. Any failure is one line on stderr,
# naming what failed and what to do, and exit status 1.
#
#   build.sh WEB_SOURCE_DIR WORK_DIR OUT_JS OUT_CC
set -uo pipefail
web=$1 work=$2 out_js=$3 out_cc=$4
fail() { echo "profil: $*" >&2; exit 1; }
for tool in npm node; do
  command -v "$tool" > /dev/null ||
    fail "$tool not found: the HTML report's flame graph (d3-flame-graph) is installed from npm at build time; scripts/install-deps.sh installs nodejs and npm"
done
mkdir -p "$work" || fail "cannot create $work"
cp "$web/package.json" "$web/package-lock.json" "$work/" || fail "cannot copy $web/package.json and package-lock.json to $work"
log=$work/npm-ci.log
# --ignore-scripts: the packages are plain JavaScript and need no install
# scripts; none runs on the build machine.
if ! (cd "$work" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) > "$log" 2>&1; then
  # npm's first line that says what went wrong, past its code/errno lines.
  reason=$(grep -E '^npm (ERR!|error) ' "$log" | grep -v -E '^npm (ERR!|error) +(code|errno|syscall|path) ' |
    head -n 1 | sed -E 's/^npm (ERR!|error) +//')
  fail "npm ci failed for the HTML report's flame graph (web/package-lock.json): ${reason:-see $log} (log: $log)"
fi
node "$web/bundle.mjs" "$work/node_modules" "$out_js" "$out_cc.tmp" > "$work/bundle.log" 2>&1 ||
  fail "web/bundle.mjs failed: $(tail -n 1 "$work/bundle.log") (log: $work/bundle.log)"
mv "$out_cc.tmp" "$out_cc" || fail "cannot write $out_cc"
