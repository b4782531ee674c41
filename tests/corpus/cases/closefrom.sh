#!/usr/bin/env bash
# A daemon-like program (progs/closefrom_daemon.c): it forks, its parent
# exits, and the child closes every descriptor above stderr with
# closefrom(3), then burns CPU. It must stay sampled on either clock (the
# perf clock's descriptors are among those closed), and profil run must
# wait for the orphaned child.
source "$(dirname "$0")/../lib.sh"
need "${CC:-cc}"
"${CC:-cc}" -O2 -o "$work/in/closefrom_daemon" "$case_dir/progs/closefrom_daemon.c" || exit 1
for clock in auto cpu; do
  compare closefrom_$clock --run-args "--clock $clock" -- ./closefrom_daemon
done
finish
