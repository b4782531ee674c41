#!/bin/sh
# profil top (issue 33) through a real terminal: tmux runs it in a pane of
# its own server, sends it keys, and reads the pane back (capture-pane).
# Nothing waits for a time: each step retries until the pane shows what it
# should, for at most 120 s (a loaded machine), and what is compared is
# read from one capture. Cases:
#   1. -- COMMAND: the hottest function on screen; self ranks hot_leaf (3
#      units of work) over cool_leaf (1); t sorts by total, where their
#      caller outer_work has more than hot_leaf; s sorts since the start;
#      f freezes the rows while the status line counts on, f again thaws
#      them; q ends it and the program it started, and -o wrote a profile
#      profil report names hot_leaf in, with every sample shown since the
#      start (each second's take summed, not the last alone).
#   2. two processes and threads: m merges a process's two threads into
#      one row ("2 threads"); p with the child's pid shows the child
#      alone, p with nothing every process again.
#   3. PID: a running process is watched, and left running at q.
#   4. --all: the running process among every one, p shows it alone
#      (skipped, saying why, where per-CPU events are refused).
#   5. --event page-faults: the title names the event and its period, and
#      fault_leaf (fresh pages) has over 90 % of the faults since the
#      start (one sample every 16 faults, hundreds of thousands a minute:
#      no sampling error to speak of), hot_leaf none.
#   6. errors: --all with a PID, nothing to watch, no terminal, no
#      process, no program (said before the screen is taken).
# usage: top_tmux.sh PROFIL TOP_TARGET
profil=$(realpath "$1") || exit 1
target=$(realpath "$2") || exit 1
command -v tmux > /dev/null || { echo "SKIP: tmux is not installed"; exit 77; }
work=$(mktemp -d)
socket=$work/tmux.sock
failures=0
attached=
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
t() { tmux -S "$socket" "$@"; }
cleanup() {
  t kill-server 2> /dev/null
  [ -n "$attached" ] && kill "$attached" 2> /dev/null
  rm -rf "$work"
}
trap cleanup EXIT

pane() { t capture-pane -p -t top > "$work/pane" 2> /dev/null; }
# wait_for WHAT COMMAND...: captures the pane until COMMAND succeeds on it
# (eval 'COMMAND' where it reads the pane in its words).
wait_for() {
  what=$1
  shift
  i=0
  while [ $i -lt 600 ]; do
    pane
    "$@" && return 0
    sleep 0.2
    i=$((i + 1))
  done
  fail "the pane never showed $what"
  cat "$work/pane"
  return 1
}
shows() { grep -q -E -- "$1" "$work/pane"; }
hides() { ! shows "$1"; }
# field FUNCTION N: field N of FUNCTION's first row ("-" is 0): 1 and 2 the
# last window's self and total, 3 and 4 since the start's, 7 the pid.
field() { awk -v f="$1" -v n="$2" '$5 == f { v = $n; print (v == "-" ? 0 : v); exit }' "$work/pane"; }
since_start() { sed -n 's/.*, \([0-9]*\) since the start.*/\1/p' "$work/pane" | head -n 1; }
sampled() { sed -n 's/^sampled \([0-9]*\).*/\1/p' "$work/pane" | head -n 1; }
more() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 > b + 0) }'; }
at_least() { n=$(since_start); [ -n "$n" ] && [ "$n" -ge "$1" ]; }
# start NAME ARGS...: profil top ARGS in the pane; its status goes to
# $work/NAME.status, its stderr to $work/NAME.err.
start() {
  name=$1
  shift
  printf '"%s" top' "$profil" > "$work/$name.sh"
  for word in "$@"; do printf ' "%s"' "$word" >> "$work/$name.sh"; done
  printf ' 2> "%s"; echo $? > "%s"\n' "$work/$name.err" "$work/$name.status" >> "$work/$name.sh"
  # The last case's session is gone first: its pane closes after its
  # status is written, and a new session of the same name before that fails.
  i=0
  while t has-session -t top 2> /dev/null && [ $i -lt 600 ]; do
    sleep 0.2
    i=$((i + 1))
  done
  t new-session -d -s top -x 200 -y 50 "sh $work/$name.sh"
}
# One session that outlives the cases keeps the server up between them: a
# server left without sessions exits, and a case started while it was
# exiting got "server exited unexpectedly" (a loaded suite run).
t -f /dev/null new-session -d -s keep "sleep 100000" || { echo "FAIL: tmux did not start"; exit 1; }
# ended NAME: waits for its status; prints it.
ended() {
  i=0
  while [ ! -s "$work/$1.status" ] && [ $i -lt 600 ]; do
    sleep 0.2
    i=$((i + 1))
  done
  cat "$work/$1.status" 2> /dev/null || echo "none"
}

# 1. A program started by profil top.
start one -o "$work/out" -- "$target" burn
wait_for "hot_leaf" shows '^ +[-0-9.]+ +[-0-9.]+ +[-0-9.]+ +[-0-9.]+ +hot_leaf \(top_target\)'
shows 'profil top +top_target \(pid [0-9]+\) +500 Hz +sorted by self, last 1 s' || fail "title: $(head -n 1 "$work/pane")"
shows '^sampled [0-9]+ +lost [0-9]+' || fail "no status line: $(tail -n 1 "$work/pane")"
# A second of the target's CPU (500 samples) since the start at least.
wait_for "500 samples since the start" at_least 500
hot=$(field hot_leaf 3) cool=$(field cool_leaf 3)
more "$hot" "$cool" || fail "self since the start: hot_leaf $hot % is not above cool_leaf $cool %"
[ "$(sed -n 4p "$work/pane" | awk '{ print $5 }')" = hot_leaf ] || fail "hot_leaf is not the first row: $(sed -n 4p "$work/pane")"
t send-keys -t top t
wait_for "sorted by total" shows 'sorted by total, last 1 s'
outer=$(field outer_work 4) hot=$(field hot_leaf 4)
more "$outer" "$hot" || fail "total since the start: outer_work $outer % is not above hot_leaf $hot %"
t send-keys -t top s
wait_for "since the start" shows 'sorted by total, since start'
t send-keys -t top f
wait_for "[FROZEN]" shows '\[FROZEN\]'
frozen=$(since_start)
# Two windows later by the status line, the rows are still those frozen.
before=$(sampled)
wait_for "a window after the freeze" eval 'more "$(sampled)" "$before"' 
before=$(sampled)
wait_for "a second window after the freeze" eval 'more "$(sampled)" "$before"' 
[ "$(since_start)" = "$frozen" ] || fail "frozen rows changed: $frozen samples since the start, then $(since_start)"
t send-keys -t top f
wait_for "the rows thawed" eval 'more "$(since_start)" "$frozen"' 
pane
shown=$(since_start)
t send-keys -t top q
status=$(ended one)
[ "$status" = 0 ] || fail "profil top -o exited $status: $(cat "$work/one.err")"
grep -q 'ended at q; sent top_target (pid [0-9]*) SIGTERM: it was killed by SIGTERM' "$work/one.err" ||
  fail "no line saying how it ended: $(cat "$work/one.err")"
set -- "$work"/out/top_target.*.pb.gz
if [ -f "$1" ]; then
  "$profil" report "$1" > "$work/report" 2>&1 || fail "profil report: $(cat "$work/report")"
  grep -q hot_leaf "$work/report" || fail "the -o profile has no hot_leaf: $(head -n 20 "$work/report")"
  # Every second seen is in the file, not the last one alone.
  written=$(sed -n 's/^profil report by function: \([0-9]*\) samples.*/\1/p' "$work/report")
  [ -n "$written" ] && [ "$written" -ge "$shown" ] ||
    fail "the -o profile holds '$written' samples, fewer than the $shown shown since the start"
else
  fail "-o wrote no top_target profile: $(ls "$work/out"; cat "$work/one.err")"
fi

# 2. Two processes, one with two threads.
start two -- "$target" fork
wait_for "both processes" eval 'shows " child_work " && shows " parent_work "'
t send-keys -t top m
wait_for "parent_work's two threads merged" shows 'parent_work \(top_target\) +[0-9]+ +top_target +2 threads'
child=$(field child_work 7) parent=$(field parent_work 7)
[ -n "$child" ] && [ "$child" != "$parent" ] || fail "child_work's pid '$child' is parent_work's '$parent'"
t send-keys -t top p
t send-keys -t top "$child" Enter
wait_for "the child alone" eval 'shows "process: $child" && shows " child_work "'
hides " parent_work " || fail "the parent's rows are shown with the child's pid asked for"
t send-keys -t top p Enter
wait_for "every process again" shows " parent_work "
t send-keys -t top q
status=$(ended two)
[ "$status" = 0 ] || fail "profil top of two processes exited $status: $(cat "$work/two.err")"

# 3. A running process.
"$target" burn &
attached=$!
start three "$attached"
wait_for "the attached process's hot_leaf" eval '[ "$(field hot_leaf 7)" = "$attached" ]'
shows "top_target \\(pid $attached\\)" || fail "title: $(head -n 1 "$work/pane")"
t send-keys -t top q
status=$(ended three)
[ "$status" = 0 ] || fail "profil top PID exited $status: $(cat "$work/three.err")"
kill -0 "$attached" 2> /dev/null || fail "the attached process did not run on after q"

# 4. Every process: the busy one among them, and p shows it alone. Where
# per-CPU events are refused (not root, no CAP_PERFMON) one line says so.
start four --all
wait_for "the machine's rows, or a refusal" eval '[ "$(field hot_leaf 7)" = "$attached" ] || [ -s "$work/four.status" ]'
if [ -s "$work/four.status" ]; then
  if grep -q 'top --all: ' "$work/four.err" && [ "$(cat "$work/four.status")" = 1 ]; then
    echo "SKIP --all: $(cat "$work/four.err")"
  else
    fail "profil top --all ended by itself: $(cat "$work/four.status" "$work/four.err")"
  fi
else
  shows 'profil top +every process' || fail "title: $(head -n 1 "$work/pane")"
  t send-keys -t top p
  t send-keys -t top "$attached" Enter
  wait_for "the busy process alone" eval 'shows "process: $attached"'
  # The pid column of a 200-column screen: 30 bytes of shares, the
  # function's 122 (top_view.cc), a space, then 7.
  pids=$(awk 'NR > 3 && substr($0, 154, 7) ~ /^ *[0-9]+$/ { print substr($0, 154, 7) + 0 }' "$work/pane" | sort -u)
  [ "$pids" = "$attached" ] || fail "rows of other processes with $attached asked for: $pids"
  t send-keys -t top q
  status=$(ended four)
  [ "$status" = 0 ] || fail "profil top --all exited $status: $(cat "$work/four.err")"
fi

# 5. An event (issue 33): page faults, not time, counted where they are
# taken; the title names the event and its period instead of a rate.
start five --event page-faults --period 16 -- "$target" faults
wait_for "fault_leaf's faults" shows '^ +[-0-9.]+ +[-0-9.]+ +[-0-9.]+ +[-0-9.]+ +fault_leaf \(top_target\)'
shows 'profil top +top_target \(pid [0-9]+\) +page-faults every 16 ' || fail "title: $(head -n 1 "$work/pane")"
wait_for "500 faults since the start" at_least 500
# Of the faults since the start, fault_leaf takes nearly all: hot_leaf
# touches no new page.
faults=$(field fault_leaf 3)
more "$faults" 90 || fail "fault_leaf has $faults % of the page faults, not over 90 %"
t send-keys -t top q
status=$(ended five)
[ "$status" = 0 ] || fail "profil top --event exited $status: $(cat "$work/five.err")"

# 6. Errors: one line, a status.
check_error() {
  want=$1
  shift
  "$profil" top "$@" < /dev/null > /dev/null 2> "$work/err"
  got=$?
  [ "$got" = "$want" ] || fail "profil top $*: status $got, not $want"
  [ "$(wc -l < "$work/err")" = 1 ] || fail "profil top $*: not one line: $(cat "$work/err")"
}
check_error 2 --all 1
grep -q 'takes no PID' "$work/err" || fail "--all with a PID: $(cat "$work/err")"
check_error 2
check_error 1 -- "$target"
grep -q 'not a terminal' "$work/err" || fail "no terminal: $(cat "$work/err")"
check_error 1 4194305
grep -q 'no such process' "$work/err" || fail "no process: $(cat "$work/err")"
check_error 127 -- "$work/no such program"
grep -q 'no such program' "$work/err" || fail "no program: $(cat "$work/err")"

[ $failures = 0 ] && echo "top_tmux: all passed"
exit $((failures != 0))
