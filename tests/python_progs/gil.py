# Two threads for the GIL's label (issue 31, tests/run_python_gil.sh): one
# spins in pure Python (it holds the GIL whenever it runs), the other
# compresses a large buffer with zlib's compressobj, whose compress() and
# flush() let the GIL go while deflate runs (2.7 to 3.13), so its CPU time is
# mostly spent without it. (hashlib would do too where it is OpenSSL's, for
# data over 2047 bytes: pyenv's 2.7 and 3.6 here have no _hashlib, and their
# built-in sha256 keeps the GIL.) Each thread names
# itself (its comm, through /proc/thread-self) so that a report can tell
# them apart on every version, 2.7 included.
# Each thread runs until it has had SECONDS of CPU time of its own (not of
# the clock: beside two busy loops and a loaded suite the hasher had 78 ms
# of CPU in 3 s, and the test wants 100 samples at 1 kHz), or 20 times
# that of the clock at most.
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


def thread_cpu():
    # utime + stime of this thread, from /proc (2.7 and 3.6 have no
    # time.thread_time); read every 50 ms of the clock only, so that the
    # spinner spends its time in Python holding the GIL, not in reads.
    with open("/proc/thread-self/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / float(os.sysconf("SC_CLK_TCK"))


class Budget(object):
    def __init__(self, seconds):
        self.seconds = seconds
        self.give_up = time.time() + 20 * seconds + 10
        self.next_look = 0.0

    def left(self):
        now = time.time()
        if now < self.next_look:
            return True
        self.next_look = now + 0.05
        return now < self.give_up and thread_cpu() < self.seconds


def spinner(seconds):
    name("spinner")
    budget = Budget(seconds)
    n = 0
    while budget.left():
        for i in range(1000):
            n += i * i % 7
    return n


def hasher(seconds):
    name("hasher")
    data = os.urandom(1 << 20)
    budget = Budget(seconds)
    while budget.left():
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
