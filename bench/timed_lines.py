#!/usr/bin/env python3
"""bench/threads.sh's clock (issue 32): runs a command and prints each line
it writes (stdout and stderr, merged) with the seconds since its start, then
"exit <status> after <seconds>". Among 1,000 busy threads a shell's own
date(1) waits its turn as long as the command does; this script asks to run
before them (SCHED_FIFO, else nice -20, where allowed) and starts the command
at the normal priority (SCHED_OTHER, nice 0), so that only the command's
own time is measured.
  python3 timed_lines.py COMMAND [ARG...]"""
import os
import subprocess
import sys
import time


def raise_own_priority():
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
    except OSError:
        try:
            os.setpriority(os.PRIO_PROCESS, 0, -20)
        except OSError:
            print("(timed_lines: cannot raise its own priority: times include its waits)", file=sys.stderr)


def normal_priority():
    os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    os.setpriority(os.PRIO_PROCESS, 0, 0)


def main():
    raise_own_priority()
    start = time.monotonic()
    child = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             preexec_fn=normal_priority, text=True, errors="replace")
    for line in child.stdout:
        print(f"{time.monotonic() - start:8.3f} {line}", end="", flush=True)
    status = child.wait()
    print(f"exit {status} after {time.monotonic() - start:.3f}", flush=True)


if __name__ == "__main__":
    main()
