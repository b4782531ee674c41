# Two functions whose work is 3 : 1 by construction (the same small-int
# loop, three times as many iterations), and a third path through C
# (sorted() calling back into Python), for profil's Python frames (issue 31).
# Runs for the CPU seconds given, after timing each function alone, and
# prints "timed_three F": three's share of the pair's time, timed.
# Written for Python 2.7 and 3.6+ alike.
import sys
import time

try:
    cpu = time.process_time
except AttributeError:  # 2.7
    cpu = time.clock


def small_int_work(n):
    total = 0
    for i in range(n):
        total += i % 7
    return total


def three():
    return small_int_work(300000)


def one():
    return small_int_work(100000)


def keyed(x):
    return small_int_work(1000) + x % 5


def c_path():
    return sorted(range(100), key=keyed)


def timed(function, calls):
    start = cpu()
    for _ in range(calls):
        function()
    return cpu() - start


def main():
    seconds = float(sys.argv[1])
    t3 = timed(three, 20)
    t1 = timed(one, 20)
    sys.stdout.write("timed_three %.4f\n" % (t3 / (t3 + t1)))
    sys.stdout.flush()
    end = cpu() + seconds
    while cpu() < end:
        three()
        one()
        c_path()


main()
