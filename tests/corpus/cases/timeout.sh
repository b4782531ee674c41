#!/usr/bin/env bash
# coreutils timeout (issue 20) around a shell spinning on the CPU: timeout
# arms its own timer, kills the spinner's process group with SIGTERM and
# exits 124, plain and profiled alike, on every clock.
source "$(dirname "$0")/../lib.sh"
need timeout sh
while read -r clock; do
  compare "timeout_spin_$(clock_label "$clock")" --run-args "--clock $clock" -- timeout 0.5 sh -c 'while :; do :; done'
  [ "$plain_exit" = 124 ] || fail "timeout exited $plain_exit without profil, not 124"
done < <(clock_runs)
finish
