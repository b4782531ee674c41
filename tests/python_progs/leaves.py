# Two leaf functions whose work is 3 : 1 by construction (the same loop,
# three times as many iterations, no Python callee), for comparing profil's
# Python frames with the names CPython's own perf trampoline gives
# (python3.12+ -X perf): with no callee, each sample's innermost py:: frame
# is the function itself (issue 31). Runs for the CPU seconds given.
import sys
import time


def three():
    total = 0
    for i in range(300000):
        total += i % 7
    return total


def one():
    total = 0
    for i in range(100000):
        total += i % 7
    return total


end = time.process_time() + float(sys.argv[1])
while time.process_time() < end:
    three()
    one()
