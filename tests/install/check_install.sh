#!/usr/bin/env bash
# Installs the build into a fresh prefix, then builds a consumer with
# pkg-config and with find_package(profil), and runs both.
set -euo pipefail
build=$1
here=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig:$work/prefix/lib/x86_64-linux-gnu/pkgconfig"
cc -o "$work/by-pkg-config" "$here/consumer.c" $(pkg-config --cflags --libs profil)
"$work/by-pkg-config"
cmake -S "$here" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/cmake-build" >/dev/null
"$work/cmake-build/consumer"
echo "install consumers: ok"
