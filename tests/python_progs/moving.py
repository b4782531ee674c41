# A Python stack that changes every few microseconds (issue 31, "at the
# sample, or not"): a recursion 40 frames deep that ends in one of two
# short leaves, alternating, so that a stack read even a little after its
# sample is likely another depth. Runs for the CPU seconds given.
# Written for Python 2.7 and 3.6+ alike.
import sys
import time

try:
    cpu = time.process_time
except AttributeError:  # 2.7
    cpu = time.clock


def leaf_a():
    return 1 + 2


def leaf_b():
    return 3 * 4


def down(depth, leaf):
    if depth == 0:
        return leaf()
    return down(depth - 1, leaf)


def main():
    end = cpu() + float(sys.argv[1])
    while cpu() < end:
        for depth in range(0, 40, 3):
            down(depth, leaf_a)
            down(40 - depth, leaf_b)


main()
