#!/usr/bin/env bash
# The corpus table (issue 9): one Markdown row per program run of the last
# corpus run, in the order of the case files.
#   tests/corpus/table.sh [BUILD]        the table of the last `ctest -L corpus`
#   tests/corpus/table.sh --run [BUILD]  run the corpus first (ctest -L corpus -j2)
set -euo pipefail
run=0
if [ "${1:-}" = --run ]; then run=1; shift; fi
build=$(cd "${1:-build}" && pwd)
if [ $run = 1 ]; then
  (cd "$build" && ctest -L corpus -j2 --output-on-failure) || true
fi
rows=$build/tests/corpus/rows
if ! compgen -G "$rows/*.md" > /dev/null; then
  echo "table.sh: $rows: no rows (run the corpus: ctest -L corpus, or table.sh --run)" >&2
  exit 1
fi
echo "| case | program | status same | output same | CPU accounted of used under profil run (%); used without | samples | files |"
echo "|---|---|---|---|---|---|---|"
cat "$rows"/*.md
