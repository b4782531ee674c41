# Two threads for the GIL's label (issue 31, tests/run_python_gil.sh): one
# spins in pure Python (it holds the GIL whenever it runs), the other
# compresses a large buffer with zlib's compressobj, whose compress() and
# flush() let the GIL go while deflate runs (2.7 to 3.13), so its CPU time is
# mostly spent without it. (hashlib would do too where it is OpenSSL's, for
# data over 2047 bytes: pyenv's 2.7 and 3.6 here have no _hashlib, and their
# built-in sha256 keeps the GIL.) Each thread names
# itself (its comm, through /proc/thread-self) so that a report can tell
# them apart on every version, 2.7 included.
# Usage: gil.py SECONDS
import os
import sys
import threading
import time
import zlib


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
    data = os.urandom(1 << 20)
    end = time.time() + seconds
    while time.time() < end:
        compressor = zlib.compressobj(6)
        compressor.compress(data)
        compressor.flush()


# 2.7 lets the GIL go and takes it back every 100 instructions, asked or
# not (its holder is NULL meanwhile): the spinner then held it in 87-93 % of
# its samples beside two busy loops. Every 100000, as 3.x lets it go only
# when asked (every 5 ms at most), so that a thread's share is the program's
# and not 2.7's check interval.
if sys.version_info[0] == 2:
    sys.setcheckinterval(100000)

seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
threads = [threading.Thread(target=spinner, args=(seconds,)), threading.Thread(target=hasher, args=(seconds,))]
for t in threads:
    t.start()
for t in threads:
    t.join()
