#!/usr/bin/env bash
# /usr/bin/python3 (the real binary: a version manager's python3 shim would
# spawn shells) with threads: two hash large buffers (hashlib releases the
# GIL, so they run in parallel), one runs Python code.
source "$(dirname "$0")/../lib.sh"
need /usr/bin/python3
cat > "$work/in/threads.py" <<'PY'
import hashlib
import threading

results = {}

def digest(name, size):
    data = bytes(range(256)) * (size // 256)
    h = hashlib.sha256()
    for _ in range(12):
        h.update(data)
    results[name] = h.hexdigest()

def count(name, n):
    s = 0
    for i in range(n):
        s += i * i % 7
    results[name] = s

threads = [threading.Thread(target=digest, args=("sha-a", 48 << 20)),
           threading.Thread(target=digest, args=("sha-b", 40 << 20)),
           threading.Thread(target=count, args=("loop", 7000000))]
for t in threads:
    t.start()
for t in threads:
    t.join()
for name in sorted(results):
    print(name, results[name])
PY
compare python3_threads -- /usr/bin/python3 threads.py
finish
