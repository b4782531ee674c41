#!/usr/bin/env bash
# ImageMagick writing a JPEG (issue 20): its coder modules (coders/jpeg.so,
# and libjpeg with it) are loaded at run time and unloaded before the
# process ends; their samples must keep their object, not fall into
# [unknown] at 0x0 (59 % of convert's samples were there). The same JPEG,
# plain and profiled; libjpeg at least a tenth of the samples (perf: 35 %)
# and [unknown] under a fifth.
source "$(dirname "$0")/../lib.sh"
im=/usr/bin/convert-im6.q16
[ -x "$im" ] || im=/usr/bin/convert
[ -x "$im" ] && "$im" -version 2>/dev/null | grep -q ImageMagick ||
  { echo "SKIP [$case_name]: ImageMagick's convert is not installed" >&2; exit 77; }
"$im" -size 1200x1200 plasma:fractal -seed 7 "$work/in/in.ppm" 2>/dev/null ||
  "$im" -size 1200x1200 gradient:red-blue "$work/in/in.ppm"
compare convert_jpeg --files out.jpg -- "$im" in.ppm -quality 95 out.jpg
shares=$("$PROFIL" report --by object --format csv "$profile_dir"/*.pb.gz 2>/dev/null)
share_of() { awk -F, -v name="$1" 'index($5, name) == 1 { s += $2 } END { printf "%d", s }' <<< "$shares"; }
jpeg=$(share_of libjpeg)
unknown=$(share_of '[unknown]')
echo "  libjpeg ${jpeg} %, [unknown] ${unknown} % of the samples"
[ "$jpeg" -ge 10 ] || fail "libjpeg has ${jpeg} % of the samples (unloaded coder modules lost their object?)"
[ "$unknown" -lt 20 ] || fail "[unknown] has ${unknown} % of the samples"
finish
