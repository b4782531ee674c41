#!/bin/sh
# The layers of docs/architecture.md, checked: each folder of src/ (and
# tools/) includes only folders on a lower floor, or itself. Tests are
# exempt (a test may reach up to build what it checks). A header named
# "profil/..." is a public one (include/profil/) and sits on the ground.
#
# Usage: architecture_layers.sh SOURCE_DIR. Prints every include that runs
# up a floor (or sideways onto a folder of the same floor) and exits 1, or
# prints nothing and exits 0.
set -eu
top=${1:?usage: architecture_layers.sh SOURCE_DIR}
cd "$top"

# The floors, from the ground up (docs/architecture.md, "Layers").
floor() {
  case $1 in
    profil | base) echo 0 ;;
    format | perf | unwind) echo 1 ;;
    interp) echo 2 ;;
    sampler) echo 3 ;;
    runtime) echo 4 ;;
    outside | report) echo 5 ;;
    tools) echo 6 ;;
    *) echo unknown ;;
  esac
}

status=0
for file in $(find src tools -type f \( -name '*.cc' -o -name '*.h' -o -name '*.S' -o -name '*.c' \) \
                ! -name '*_test.cc' ! -name 'test_*.h' | sort); do
  case $file in
    tools/*) from=tools ;;
    *) from=$(echo "$file" | cut -d/ -f2) ;;
  esac
  from_floor=$(floor "$from")
  if [ "$from_floor" = unknown ]; then
    echo "$file: its folder $from has no floor in tests/architecture_layers.sh (add it there and in docs/architecture.md)"
    status=1
    continue
  fi
  for to in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([a-z_]*\)\/.*/\1/p' "$file" | sort -u); do
    [ "$to" = "$from" ] && continue
    to_floor=$(floor "$to")
    [ "$to_floor" = unknown ] && continue  # a folder of its own area (tools/profil's "profil/...")
    if [ "$to_floor" -ge "$from_floor" ]; then
      echo "$file includes $to/ (floor $to_floor) from $from/ (floor $from_floor): an include up a layer"
      status=1
    fi
  done
done
exit $status
