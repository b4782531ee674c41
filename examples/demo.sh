#!/usr/bin/env bash
# make demo: profile the bundled example and print its report.
# (Until `profil run` lands, the example profiles itself through the API.)
set -euo pipefail
build=${1:-build}
"$build/bin/api_demo"
