#!/usr/bin/env python3
"""Shares of JIT code in a profil report's CSV (issue 34, run_jit_*.sh).

Usage: jit_shares.py REPORT.csv PATTERN...
Prints, space-separated: all samples, JIT samples (the leaf in [jit] or
[anon]: a JIT's anonymous code), the JIT samples named from a map, then the
samples of each PATTERN (functions whose name holds it).
"""
import csv
import sys

rows = list(csv.DictReader(open(sys.argv[1], newline="")))
patterns = sys.argv[2:]
total = jit = named = 0
matched = [0] * len(patterns)
for row in rows:
    n = int(row["samples"])
    total += n
    if row["object"] in ("[jit]", "[anon]"):
        jit += n
        if not row["function"].startswith(("[unknown", "0x")):
            named += n
    for i, p in enumerate(patterns):
        if p in row["function"]:
            matched[i] += n
print(total, jit, named, *matched)
