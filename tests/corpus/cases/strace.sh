#!/usr/bin/env bash
# strace -f (issue 20): strace forks a probe child it SIGKILLs on purpose,
# then traces /bin/true. profil run exited 1 ("strace (pid N): started
# profiling and wrote no profile"): a child killed by its parent must be a
# normal end. strace traces its children itself, so the plain run is not
# under corpus_trace (compare_untraced); both under a timeout, so that a
# child left in a tracing stop fails the case instead of hanging it.
source "$(dirname "$0")/../lib.sh"
need strace /bin/true
while read -r clock; do
  compare_untraced "strace_f_$(clock_label "$clock")" --run-args "--clock $clock" -- strace -f -o /dev/null /bin/true
done < <(clock_runs)
finish
