#!/bin/sh
# Every manual page renders without a warning (groff -ww: all warnings).
# usage: man_pages.sh DIR
failures=0
for page in "$1"/man*/*.[0-9]; do
  warnings=$(groff -man -ww -z "$page" 2>&1)
  if [ -n "$warnings" ]; then
    echo "FAIL: $page:"
    echo "$warnings"
    failures=$((failures + 1))
  fi
done
exit $failures
