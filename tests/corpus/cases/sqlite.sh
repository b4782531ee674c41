#!/usr/bin/env bash
# sqlite3 with a CPU-bound query: a recursive CTE of 5 million rows.
source "$(dirname "$0")/../lib.sh"
need sqlite3
compare sqlite3_cte -- sqlite3 :memory: \
  'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 5000000) SELECT count(*), sum(x * x % 7) FROM c;'
finish
