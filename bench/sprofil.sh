#!/usr/bin/env bash
# sprofil() setup time for 10^3 .. 10^6 regions (issue 11: it was
# quadratic, 10^6 regions took over a minute).
set -euo pipefail
build=${1:-build}
echo "== sprofil: setup time against the number of regions =="
"$build/bin/sprofil_bench"
