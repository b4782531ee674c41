# A Python stack that changes every few microseconds (issue 31's "at the
# sample, or not"): a recursion 20 calls deep, down and up again and again,
# its innermost call alternating between two leaves. A sample whose Python
# frames were read later than the sample rarely finds the same stack.
# Runs for the CPU seconds given. Written for Python 2.7 and 3.6+ alike.
import sys
import time

try:
    cpu = time.process_time
except AttributeError:  # 2.7
    cpu = time.clock


def leaf_a():
    total = 0
    for i in range(20):
        total += i
    return total


def leaf_b():
    total = 1
    for i in range(20):
        total ^= i
    return total


def down(depth, which):
    if depth == 0:
        return leaf_a() if which else leaf_b()
    return down(depth - 1, which) + 1


def main():
    end = cpu() + float(sys.argv[1])
    k = 0
    while cpu() < end:
        for _ in range(100):
            down(20, k & 1)
            k += 1


main()
