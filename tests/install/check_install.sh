#!/usr/bin/env bash
# Installs the build into a fresh prefix, then builds consumers with
# pkg-config and with find_package(profil), and runs them: a program calling
# profil() (dynamic, -static and -static-pie) and a gcc -pg program (-static
# and -static-pie), whose gmon.out gprof must read with the call count; man
# finds every installed page, an alias (`man sprofil`) showing the page it
# names.
set -euo pipefail
build=$1
here=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig:$work/prefix/lib/x86_64-linux-gnu/pkgconfig"

# A static executable: no shared object needed at run time.
expect_static() {
  if readelf -d "$1" 2>/dev/null | grep -q NEEDED; then
    echo "$1: not a static executable" >&2
    exit 1
  fi
}

# Runs a -pg program in its own directory; gprof must show work() called
# 1234 times.
check_pg() {
  local prog=$1 dir
  dir=$(mktemp -d "$work/run.XXXXXX")
  (cd "$dir" && "$prog")
  if ! gprof -b -p "$prog" "$dir/gmon.out" | awk '$NF == "work" && $4 == 1234 { found = 1 } END { exit !found }'; then
    echo "$prog: gprof does not show work() called 1234 times:" >&2
    gprof -b -p "$prog" "$dir/gmon.out" >&2 || true
    exit 1
  fi
}

cc -o "$work/by-pkg-config" "$here/consumer.c" $(pkg-config --cflags --libs profil)
LD_LIBRARY_PATH="$(pkg-config --variable=libdir profil)" "$work/by-pkg-config"
for link in static static-pie; do
  cc -"$link" -o "$work/by-pkg-config-$link" "$here/consumer.c" $(pkg-config --static --cflags --libs profil)
  expect_static "$work/by-pkg-config-$link"
  "$work/by-pkg-config-$link"
  cc -"$link" -pg -O1 -o "$work/pg-by-pkg-config-$link" "$here/pg_consumer.c" $(pkg-config --static --cflags --libs profil)
  expect_static "$work/pg-by-pkg-config-$link"
  check_pg "$work/pg-by-pkg-config-$link"
done

cmake -S "$here" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/cmake-build" >/dev/null
"$work/cmake-build/consumer"
for link in static static-pie; do
  expect_static "$work/cmake-build/consumer_$link"
  "$work/cmake-build/consumer_$link"
  expect_static "$work/cmake-build/pg_consumer_$link"
  check_pg "$work/cmake-build/pg_consumer_$link"
done
man="$work/prefix/share/man"
for page in "$man"/man*/*.[0-9]; do
  name=$(basename "$page" | sed 's/\.[0-9]$//')
  section=${page##*.}
  shown=$(basename "$(sed -n 's/^\.so //p' "$page")")
  shown=${shown:-$(basename "$page")}
  title=$(echo "${shown%.*}" | tr '[:lower:]' '[:upper:]')
  if ! MANPAGER=cat MANWIDTH=80 man -M "$man" "$section" "$name" 2>/dev/null | head -n 1 | grep -q "^$title($section)"; then
    echo "man -M $man $section $name does not show ${shown%.*}($section)" >&2
    exit 1
  fi
done
echo "install consumers: ok"
