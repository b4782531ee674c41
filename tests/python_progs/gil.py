# Two threads for the GIL's label (issue 31, tests/run_python_gil.sh): one
# spins in pure Python (it holds the GIL whenever it runs), the other hashes
# a large buffer, which hashlib does with the GIL released (for data over
# 2047 bytes), so its CPU time is mostly spent without it. Each thread names
# itself (its comm, through /proc/thread-self) so that a report can tell
# them apart on every version, 2.7 included.
# Usage: gil.py SECONDS
import hashlib
import sys
import threading
import time


def name(thread_name):
    try:
        with open("/proc/thread-self/comm", "w") as comm:
            comm.write(thread_name)
    except (IOError, OSError):
        pass


def spinner(seconds):
    name("spinner")
    end = time.time() + seconds
    n = 0
    while time.time() < end:
        for i in range(1000):
            n += i * i % 7
    return n


def hasher(seconds):
    name("hasher")
    data = b"x" * (4 << 20)
    end = time.time() + seconds
    while time.time() < end:
        hashlib.sha256(data).digest()


seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
threads = [threading.Thread(target=spinner, args=(seconds,)), threading.Thread(target=hasher, args=(seconds,))]
for t in threads:
    t.start()
for t in threads:
    t.join()
