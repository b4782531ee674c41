#!/usr/bin/env bash
# Python timing out its loops with its own timers (issue 20): handlers for
# SIGALRM (signal.alarm, setitimer ITIMER_REAL) and SIGVTALRM
# (ITIMER_VIRTUAL) raise an exception that ends a busy loop, as test
# harnesses and interpreters do; a thread sleeps beside the busy main
# thread and checks that no sleep is cut short; main waits in
# signal.pause() for its timer while a thread computes (at bd681ea the
# perf ring's SIGPROFs ended that pause early: a plain return, no
# exception). The output is the same (every loop ends by its own timer,
# every sleep lasts its time) and so is the status, on every clock.
source "$(dirname "$0")/../lib.sh"
need /usr/bin/python3
cat > "$work/in/alarm.py" <<'PY'
import signal
import sys
import threading
import time


class Timeout(Exception):
    pass


def on_timer(signum, frame):
    raise Timeout(signal.Signals(signum).name)


signal.signal(signal.SIGALRM, on_timer)
signal.signal(signal.SIGVTALRM, on_timer)
lines = []
failed = False

# A sleeper beside the busy main thread: 4 x 0.15 s, none cut short.
slept = []
def sleeper():
    for _ in range(4):
        start = time.monotonic()
        time.sleep(0.15)
        slept.append(time.monotonic() - start)
thread = threading.Thread(target=sleeper)
thread.start()

# setitimer(ITIMER_REAL): five loops of 0.1 s of wall time each.
for i in range(5):
    n = 0
    signal.setitimer(signal.ITIMER_REAL, 0.1)
    try:
        while True:
            n += 1
    except Timeout as e:
        lines.append("loop %d ended by %s" % (i, e))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)

# setitimer(ITIMER_VIRTUAL): three loops of 0.1 s of CPU time each.
for i in range(3):
    signal.setitimer(signal.ITIMER_VIRTUAL, 0.1)
    try:
        while True:
            sorted(range(200), key=lambda x: -x)
    except Timeout as e:
        lines.append("cpu loop %d ended by %s" % (i, e))
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)

# signal.alarm: whole seconds, once.
signal.alarm(1)
try:
    d = {}
    while True:
        d[len(d) % 1000] = str(len(d))
except Timeout as e:
    lines.append("alarm loop ended by %s" % e)
finally:
    signal.alarm(0)

# signal.pause() until the program's own timer, a thread computing
# meanwhile (with SIGALRM blocked, so that main takes it): pause returns
# only through the handler's exception, never for a signal of profil's.
stop = False
def spin():
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
    x = 0
    while not stop:
        x += 1
spinner = threading.Thread(target=spin)
spinner.start()
signal.setitimer(signal.ITIMER_REAL, 0.3)
try:
    signal.pause()
    lines.append("pause returned without the timer's signal")
    failed = True
except Timeout as e:
    lines.append("pause ended by %s" % e)
finally:
    signal.setitimer(signal.ITIMER_REAL, 0)
    stop = True
    spinner.join()

thread.join()
short = [s for s in slept if s < 0.149]
lines.append("sleeps %d short %d" % (len(slept), len(short)))
failed = failed or bool(short)
print("\n".join(lines))
sys.exit(1 if failed else 0)
PY
while read -r clock; do
  compare "python_alarm_$(clock_label "$clock")" --run-args "--clock $clock" -- /usr/bin/python3 alarm.py
  [ "$plain_exit" = 0 ] || fail "the program failed without profil (status $plain_exit)"
done < <(clock_runs)
finish
