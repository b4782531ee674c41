#!/usr/bin/env bash
# MiniDebugInfo, made as the gdb manual's "MiniDebugInfo" section makes it:
# the function symbols that .dynsym lacks, in an xz-compressed ELF file
# inside the stripped program's .gnu_debugdata section.
#   minidebuginfo.sh <program> <output>
set -euo pipefail
binary=$1 output=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
nm -D "$binary" --format=posix --defined-only | awk '{ print $1 }' | sort > "$work/dynsyms"
nm "$binary" --format=posix --defined-only | awk '{ if ($2 == "T" || $2 == "t" || $2 == "D") print $1 }' |
  sort > "$work/funcsyms"
comm -13 "$work/dynsyms" "$work/funcsyms" > "$work/keep_symbols"
objcopy --only-keep-debug "$binary" "$work/debug"
objcopy -S --remove-section .gdb_index --remove-section .comment --keep-symbols="$work/keep_symbols" \
  "$work/debug" "$work/mini_debuginfo"
cp "$binary" "$work/binary"
strip --strip-all -R .comment "$work/binary"
xz "$work/mini_debuginfo"
objcopy --add-section .gnu_debugdata="$work/mini_debuginfo.xz" "$work/binary"
mv "$work/binary" "$output"
