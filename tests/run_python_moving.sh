#!/usr/bin/env bash
# At the sample, or not (issue 31): PYTHON runs tests/python_progs/moving.py,
# whose Python stack changes depth every few microseconds, under profil run
# both ways (interp_checks.sh's moving_checked says what is checked).
# Usage: run_python_moving.sh PROFIL PYTHON
set -euo pipefail
profil=$1 python=$2
here=$(cd "$(dirname "$0")" && pwd)
. "$here/interp_checks.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/profil-moving.XXXXXX")
trap 'rm -rf "$work"' EXIT
moving_checked Python "$profil" "$work" "$python" "$here/python_progs/moving.py" 2
