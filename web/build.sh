#!/usr/bin/env bash
# The build step behind src/report/CMakeLists.txt's flame_graph_assets.cc:
# npm_ci.sh installs what web/package-lock.json pins into the build tree,
# then bundle.mjs joins the browser builds into OUT_JS and writes them as the
# C++ source OUT_CC. Any failure is one line on stderr, naming what failed
# and what to do, and exit status 1.
#
#   build.sh WEB_SOURCE_DIR WORK_DIR OUT_JS OUT_CC
set -uo pipefail
web=$1 work=$2 out_js=$3 out_cc=$4
fail() { echo "profil: $*" >&2; exit 1; }
bash "$web/npm_ci.sh" "$web" "$work" "the HTML report's flame graph (d3-flame-graph)" || exit 1
node "$web/bundle.mjs" "$work/node_modules" "$out_js" "$out_cc.tmp" > "$work/bundle.log" 2>&1 ||
  fail "web/bundle.mjs failed: $(tail -n 1 "$work/bundle.log") (log: $work/bundle.log)"
mv "$out_cc.tmp" "$out_cc" || fail "cannot write $out_cc"
