# The corpus harness, sourced by every tests/corpus/cases/*.sh (issue 9,
# item 7): a real program run twice, as itself and under `profil run`, and
# every difference profil made reported.
#
#   compare LABEL [--files "F..."] [--run-args "ARGS"] [--no-dashdash] [--] PROGRAM [ARGS...]
#
# copies $work/in into two fresh directories, runs PROGRAM in each (stdin
# /dev/null) — once under corpus_trace, once under `profil run -o DIR --` —
# and checks:
#   - each run ends within $CORPUS_RUN_TIMEOUT seconds (120; watched);
#   - the exit status is the same;
#   - stdout is byte for byte the same, and so are the --files it wrote;
#   - every process of the plain run that used at least $min_process_ms of
#     CPU has a profile of its own: DIR/<name>.<pid>.pb.gz, name being
#     argv[0]'s base name (counted per name: three cc1 need three cc1
#     profiles);
#   - for runs of at least 1 s of CPU (and not on the wall clock, which
#     counts time blocked too), the profiles' CPU total (`profil
#     report --format json`: every sample, including `[unsampled: ...]`
#     rows) is within 10 % of what the profiled program's whole process tree
#     used in that same run (corpus_trace --no-follow around `profil run`:
#     the tree's user+sys, getrusage(RUSAGE_CHILDREN), minus profil's own
#     process, which is the conversion work), and within a factor of 2 of
#     the plain run's user+sys for its whole tree.
#     Why not 10 % against the plain run, as the issue says: two runs of the
#     same program differ too much in CPU time on a busy shared 2-core VM
#     (cc1 on one file: 269-331 ms in six runs; make -j2 beside a CPU hog:
#     1.25 s plain, 1.73 s profiled, 1.61-1.84 s in other runs), so any
#     tight bound between two runs fails by chance. Within one run the
#     comparison measures the accounting alone, and 10 % holds with room;
#     the factor 2 against the plain run still catches a profiled program
#     that does far more work (a signal storm) or a profile that lost a
#     whole thread or process.
# It writes one Markdown row of the corpus table to $CORPUS_ROWS/ and
# prints it. After compare, $plain_dir, $prof_dir, $profile_dir,
# $plain_stderr, $prof_stderr, $plain_cpu_ms (the plain run's tree) and
# $prof_cpu_ms (the profiled program's tree), $plain_exit and $prof_exit
# (the exit statuses) are the last run's, for checks of the case's own.
# `finish` ends the case: status 1 if any check failed.
#
# Environment (set by tests/corpus.cmake): PROFIL, CORPUS_TRACE, CORPUS_ROWS.
set -uo pipefail
: "${PROFIL:?path of build/bin/profil}" "${CORPUS_TRACE:?path of corpus_trace}" "${CORPUS_ROWS:?rows directory}"
export LC_ALL=C
case_name=$(basename "$0" .sh)
case_dir=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/corpus.$case_name.XXXXXX")
# CORPUS_KEEP=1 keeps the runs' directories to look at.
# Removed by this shell alone: a subshell killed before it has reset the
# traps it inherits runs this one (a watchdog killed at once, when the run
# it watches ends in microseconds, removed $work under the case: tricky_args
# failed 2 full suites in 9 with "cd: .../echo/prof: No such file").
case_shell=$BASHPID
[ "${CORPUS_KEEP:-0}" = 1 ] && echo "$case_name: work directory $work" ||
  trap '[ "$BASHPID" = "$case_shell" ] && rm -rf "$work"' EXIT
mkdir -p "$work/in" "$CORPUS_ROWS"
rm -f "$CORPUS_ROWS/$case_name".*.md
failures=0
# A process of the plain run below this much CPU need not have a profile of
# its own (issue 9 lets ones under 10 ms be gathered). The margin over 10 ms
# keeps one whose CPU time wobbles from run to run from failing: make's `as`
# processes take 8-12 ms alone, yet one took >= 20 ms in a CI run's plain
# half and under 10 ms profiled, so two runs of one short process differ by
# more than 2x on a busy 2-core VM; 5x is the margin.
min_process_ms=50
# The CPU-total check, for runs of at least min_total_ms.
min_total_ms=1000
# CORPUS_TOTAL_TOLERANCE_PERCENT widens it for a case whose fix has not
# merged yet (tests/corpus.cmake says which and until when).
total_tolerance_percent=${CORPUS_TOTAL_TOLERANCE_PERCENT:-10}

fail() {
  echo "FAIL [$case_name${label:+/$label}]: $*" >&2
  failures=$((failures + 1))
}

# The program must be there: the corpus is part of `make check`, whose
# `deps` step installs it (scripts/install-deps.sh).
need() {
  local program
  for program in "$@"; do
    command -v "$program" > /dev/null ||
      { echo "FAIL [$case_name]: $program is not installed (run scripts/install-deps.sh)" >&2; exit 1; }
  done
}

# The clocks an issue-20 case runs on (issue 20: every case on every
# clock), as `profil run` options; CORPUS_CLOCKS narrows them (words
# joined by commas: "auto,cpu,auto --no-stacks").
clock_runs() {
  local IFS=,
  printf '%s\n' ${CORPUS_CLOCKS:-auto,auto --no-stacks,perf,perf-signal,cpu,wall}
}
# A label for one of them: auto, auto_no_stacks, perf_signal, ...
clock_label() { echo "$1" | sed 's/ --/_/g; s/-/_/g'; }

# A program the case can do without (ctest reports the case as skipped,
# tests/corpus.cmake: SKIP_RETURN_CODE 77).
skip_without() {
  local program
  for program in "$@"; do
    command -v "$program" > /dev/null ||
      { echo "SKIP [$case_name]: $program is not installed (scripts/install-deps.sh installs it)" >&2; exit 77; }
  done
}

# The first value of "key": in profil report's JSON: the summary's, which
# comes before the rows.
json_number() { grep -o "\"$1\":[0-9.]*" | head -n 1 | cut -d: -f2; }

# The directories of one comparison under RUN: the plain run's and the
# profiled run's, each a fresh copy of $work/in, and the profiles'.
prepare_run_dirs() {
  plain_dir=$1/plain prof_dir=$1/prof profile_dir=$1/profile
  plain_stderr=$1/plain.stderr prof_stderr=$1/prof.stderr
  mkdir -p "$plain_dir" "$prof_dir"
  cp -a "$work/in/." "$plain_dir/"
  cp -a "$work/in/." "$prof_dir/"
}

# watched WHAT DIR OUT ERR COMMAND...: runs COMMAND in DIR, stdin /dev/null,
# stdout to OUT and stderr to ERR, and returns its status. When it has not
# ended in $CORPUS_RUN_TIMEOUT seconds (default
# 120), it is a hang, said with the state of every thread of its tree (what
# each waits in, its blocked and pending signals), and the tree is killed:
# the case fails naming the run, where ctest's timeout would name nothing.
watched() {
  local what=$1 dir=$2 out=$3 err=$4
  shift 4
  (cd "$dir" && exec "$@" < /dev/null > "$out" 2> "$err") &
  local pid=$!
  (
    # The sleep is killed with the watchdog: left behind it would hold
    # nothing of ours, but linger.
    trap 'kill "$sleeper" 2> /dev/null; exit 0' TERM
    sleep "${CORPUS_RUN_TIMEOUT:-120}" < /dev/null > /dev/null 2>&1 &
    sleeper=$!
    wait "$sleeper"
    kill -0 "$pid" 2> /dev/null || exit 0
    echo "FAIL [$case_name/$label]: the $what run did not end in ${CORPUS_RUN_TIMEOUT:-120} s; its threads:" >&2
    local tree=" $pid " grew=1 p pp
    while [ $grew = 1 ]; do
      grew=0
      while read -r p pp; do
        if [[ "$tree" == *" $pp "* && "$tree" != *" $p "* ]]; then tree+="$p "; grew=1; fi
      done < <(ps -eo pid=,ppid=)
    done
    for p in $tree; do
      for t in /proc/"$p"/task/*; do
        echo "  $(cat "$t/comm" 2> /dev/null) ${t#/proc/}: $(grep -E '^(State|SigBlk|SigPnd|ShdPnd)' "$t/status" 2> /dev/null | tr -s '\t\n' '  ')wchan $(cat "$t/wchan" 2> /dev/null); syscall $(cat "$t/syscall" 2> /dev/null)" >&2
      done
    done
    # shellcheck disable=SC2086 # the pids, one word each
    kill -KILL $tree 2> /dev/null
  ) &
  local watchdog=$!
  local status=0
  wait "$pid" || status=$?
  kill "$watchdog" 2> /dev/null
  wait "$watchdog" 2> /dev/null
  return $status
}

compare() {
  label=$1
  shift
  local files="" run_args="" dashdash=1
  while [ $# -gt 0 ]; do
    case $1 in
      --files) files=$2; shift 2 ;;
      --run-args) run_args=$2; shift 2 ;;
      --no-dashdash) dashdash=0; shift ;;
      --) shift; break ;;
      *) break ;;
    esac
  done
  local run=$work/$label
  prepare_run_dirs "$run"

  local plain_status=0 prof_status=0
  watched plain "$plain_dir" "$run/plain.stdout" "$plain_stderr" "$CORPUS_TRACE" "$run/plain.trace" "$@" ||
    plain_status=$?
  local -a run_cmd=("$PROFIL" run -o "$profile_dir")
  # shellcheck disable=SC2206 # run_args are words on purpose
  [ -n "$run_args" ] && run_cmd+=($run_args)
  [ $dashdash = 1 ] && run_cmd+=(--)
  watched profiled "$prof_dir" "$run/prof.stdout" "$prof_stderr" \
    "$CORPUS_TRACE" --no-follow "$run/prof.trace" "${run_cmd[@]}" "$@" || prof_status=$?
  if [ ! -s "$run/plain.trace" ]; then
    echo "FAIL [$case_name/$label]: corpus_trace wrote no report (status $plain_status): $(cat "$plain_stderr")" >&2
    exit 1
  fi
  sed "s/^/  $label plain stderr: /" "$plain_stderr" | head -n 20
  sed "s/^/  $label profil run stderr: /" "$prof_stderr" | head -n 40

  local status_same=yes output_same=yes
  if [ "$plain_status" != "$prof_status" ]; then
    status_same="no ($plain_status → $prof_status)"
    fail "exit status $prof_status under profil run, $plain_status without"
  fi
  if ! cmp -s "$run/plain.stdout" "$run/prof.stdout"; then
    output_same="no (stdout)"
    fail "stdout differs: $(wc -c < "$run/plain.stdout") bytes without profil, $(wc -c < "$run/prof.stdout") under it; first difference: $(cmp "$run/plain.stdout" "$run/prof.stdout" 2>&1 | head -n 1)"
  fi
  local f
  for f in $files; do
    if ! cmp -s "$plain_dir/$f" "$prof_dir/$f"; then
      output_same="no ($f)"
      fail "$f differs: $(cmp "$plain_dir/$f" "$prof_dir/$f" 2>&1 | head -n 1)"
    fi
  done

  # Every process that used CPU has its profile — unless profil said it
  # lost samples to a full ring: the kernel's LOST record names the ring's
  # owner, not whose samples were lost, so a short process's CPU may be
  # counted to another and it falls under the 10 ms of a file of its own
  # (a loaded run once put cksum, 50 ms plain, in the shared file). The
  # loss is said, so nothing is hidden; the case says it too.
  local name count found missing="" ring_lost_ms small_names
  ring_lost_ms=$(awk '/not sampled: ring buffer full/ { for (i = 1; i < NF; i++) if ($(i + 1) == "s" && $(i + 2) == "of") t += $i } END { printf "%d", t * 1000 }' "$prof_stderr")
  # The processes profil put in the file of those under 10 ms of CPU
  # (small.<pid>.pb.gz), by name.
  small_names=$(for f in "$profile_dir"/small.[0-9]*.pb.gz; do
    [ -e "$f" ] && "$PROFIL" report --by process "$f" 2> /dev/null | awk '$1 ~ /^[0-9]+$/ && $(NF - 1) ~ /^[0-9]+$/ { print $NF }'
  done)
  while read -r name count; do
    found=$(find "$profile_dir" -maxdepth 1 -name "$name.[0-9]*.pb.gz" 2> /dev/null | wc -l)
    if [ "$found" -lt "$count" ] && [ "$ring_lost_ms" -ge $((min_process_ms - 10)) ]; then
      echo "NOTE [$case_name${label:+/$label}]: $count $name process(es) used ≥ $min_process_ms ms of CPU without profil, $found profile(s) of its own: profil said $ring_lost_ms ms of CPU were lost to a full ring" >&2
    elif [ "$found" -lt "$count" ] && grep -qxF -- "$name" <<< "$small_names"; then
      # Sampled, under 10 ms this time: a process whose CPU is mostly
      # waits and system calls varies run to run beside load (cksum at
      # the end of a pipe: 10-40 ms here, 50 ms in one loaded plain run,
      # under 10 ms in the profiled run beside it). What went missing
      # would show in the CPU total below.
      echo "NOTE [$case_name${label:+/$label}]: $count $name process(es) used ≥ $min_process_ms ms of CPU without profil; under profil $((count - found)) of them used under 10 ms (in the small file)" >&2
    elif [ "$found" -lt "$count" ]; then
      missing+=" $name"
      fail "$count $name process(es) used ≥ $min_process_ms ms of CPU without profil, $found profile(s) named $name.<pid>.pb.gz in $profile_dir"
    fi
  done < <(awk -v min="$min_process_ms" '$1 == "process" && $4 >= min * 1000 { n[$3]++ } END { for (k in n) print k, n[k] }' "$run/plain.trace")

  # The CPU total.
  local measured_ms prof_tree_ms accounted_ms=0 samples=0 report_json nfiles cpu_cell
  measured_ms=$(awk '$1 == "total" { printf "%d", $2 / 1000 }' "$run/plain.trace")
  prof_tree_ms=$(awk '$1 == "total" { t = $2 } $1 == "process" { own += $4 } END { printf "%d", (t - own) / 1000 }' "$run/prof.trace")
  nfiles=$(find "$profile_dir" -maxdepth 1 -type f 2> /dev/null | wc -l)
  if compgen -G "$profile_dir/*.pb.gz" > /dev/null; then
    if report_json=$("$PROFIL" report --format json --by object "$profile_dir"/*.pb.gz 2> "$run/report.stderr"); then
      samples=$(json_number samples <<< "$report_json")
      accounted_ms=$(json_number cpu_seconds <<< "$report_json" | awk '{ printf "%d", $1 * 1000 }')
    else
      fail "profil report cannot read the profiles: $(head -n 1 "$run/report.stderr")"
    fi
  fi
  cpu_cell=$(awk -v a="$accounted_ms" -v t="$prof_tree_ms" -v m="$measured_ms" 'BEGIN {
    printf "%.2f s of %.2f s (%s); plain %.2f s", a / 1000, t / 1000, (t > 0 ? sprintf("%.0f %%", 100 * a / t) : "-"), m / 1000 }')
  within() { awk -v a="$1" -v m="$2" -v t="$3" 'BEGIN { exit !(a >= m * (1 - t / 100) && a <= m * (1 + t / 100)) }'; }
  if [[ " $run_args " == *" --clock wall "* ]]; then
    # The wall clock counts time blocked too (docs/sampler.md): its total
    # is not the CPU time.
    cpu_cell+=" (wall clock: not checked)"
  elif [ "$measured_ms" -ge "$min_total_ms" ] || [ "$prof_tree_ms" -ge "$min_total_ms" ]; then
    # Each profiled process also spends CPU on libprofil's own start and
    # final dump, which come before and after what its clocks measure (a
    # build's short processes: up to ~10 % of the run, on a busy machine
    # more). So the profiles must account for the processes' CPU under
    # profil run, or for the program's own work: the plain run's.
    # On a loaded machine the same work costs more CPU under profil run
    # than plainly (caches and cores shared; sort's pipeline: 1378 ms plain,
    # 1730 ms profiled beside three busy loops): an account between the two
    # is right too.
    between() { awk -v a="$1" -v x="$2" -v y="$3" 'BEGIN { exit !((a >= x && a <= y) || (a >= y && a <= x)) }'; }
    local matches_profiled_run=false
    within "$accounted_ms" "$prof_tree_ms" "$total_tolerance_percent" && matches_profiled_run=true
    $matches_profiled_run ||
      within "$accounted_ms" "$measured_ms" "$total_tolerance_percent" ||
      between "$accounted_ms" "$measured_ms" "$prof_tree_ms" ||
      fail "the profiles account for $accounted_ms ms of CPU, the program's processes used $prof_tree_ms ms under profil run and $measured_ms ms plainly (not between them, and more than $total_tolerance_percent % apart from both)"
    # Against the plain run only when the account is not the profiled
    # run's own CPU: on a loaded VM the CPU time of the same work swings
    # (CI: sqlite's CTE 945 ms plain, 1950 ms profiled while other builds
    # ran, 1942 ms accounted; 3 of 3 quiet runs pass). What profil costs
    # the program is the benchmarks' to measure (bench/run_overhead.sh).
    $matches_profiled_run ||
      awk -v a="$accounted_ms" -v m="$measured_ms" 'BEGIN { exit !(a >= m / 2 && a <= m * 2) }' ||
      fail "the profiles account for $accounted_ms ms of CPU, the plain run used $measured_ms ms (more than a factor of 2 apart)"
  else
    cpu_cell+=" (under 1 s: not checked)"
  fi
  [ -n "$missing" ] && cpu_cell+="; no profile:$missing"
  plain_cpu_ms=$measured_ms prof_cpu_ms=$prof_tree_ms
  plain_exit=$plain_status prof_exit=$prof_status

  local row
  row="| $case_name/$label | \`$(printf '%q ' "$@" | cut -c 1-60 | sed 's/ *$//; s/|/\\|/g')\` | $status_same | $output_same | $cpu_cell | $samples | $nfiles |"
  echo "$row" > "$CORPUS_ROWS/$case_name.$label.md"
  echo "corpus row: $row"
}

# compare_untraced LABEL [--filter SED] [--timeout S] [--run-args "ARGS"] [--] PROGRAM [ARGS...]
#
# For programs that trace their own children (strace -f, gdb), which
# cannot run under corpus_trace (a process has one tracer): PROGRAM runs
# plainly and under `profil run -o DIR [ARGS] --`, each under `timeout -k 5
# S` (default 60), stdin /dev/null; checks the exit status is the same,
# stdout is the same after the sed script SED (for pids and addresses
# that differ from run to run), and that neither run hung (killed by
# timeout: 124, or 137 after -k). No CPU accounting. Sets the same
# variables as compare.
compare_untraced() {
  label=$1
  shift
  local filter="" limit=60 run_args=""
  while [ $# -gt 0 ]; do
    case $1 in
      --filter) filter=$2; shift 2 ;;
      --timeout) limit=$2; shift 2 ;;
      --run-args) run_args=$2; shift 2 ;;
      --) shift; break ;;
      *) break ;;
    esac
  done
  local run=$work/$label
  prepare_run_dirs "$run"
  local plain_status prof_status
  (cd "$plain_dir" && timeout -k 5 "$limit" "$@" < /dev/null > "$run/plain.stdout" 2> "$plain_stderr")
  plain_status=$?
  local -a run_cmd=("$PROFIL" run -o "$profile_dir")
  # shellcheck disable=SC2206 # run_args are words on purpose
  [ -n "$run_args" ] && run_cmd+=($run_args)
  (cd "$prof_dir" && timeout -k 5 "$limit" "${run_cmd[@]}" -- "$@" < /dev/null > "$run/prof.stdout" 2> "$prof_stderr")
  prof_status=$?
  sed "s/^/  $label plain stderr: /" "$plain_stderr" | head -n 20
  sed "s/^/  $label profil run stderr: /" "$prof_stderr" | head -n 40
  local status_same=yes output_same=yes hung=""
  case $plain_status in 124 | 137) hung+=" plain" ;; esac
  case $prof_status in 124 | 137) hung+=" profiled" ;; esac
  if [ -n "$hung" ]; then
    fail "hung (killed by timeout after $limit s, status 124/137):$hung run"
  fi
  if [ "$plain_status" != "$prof_status" ]; then
    status_same="no ($plain_status → $prof_status)"
    fail "exit status $prof_status under profil run, $plain_status without"
  fi
  if ! cmp -s <(sed -e "${filter:-p;d}" "$run/plain.stdout") <(sed -e "${filter:-p;d}" "$run/prof.stdout"); then
    output_same="no (stdout)"
    fail "stdout differs${filter:+ (after sed '$filter')}: $(diff <(sed -e "${filter:-p;d}" "$run/plain.stdout") <(sed -e "${filter:-p;d}" "$run/prof.stdout") | head -n 6 | tr '\n' ' ')"
  fi
  plain_exit=$plain_status prof_exit=$prof_status
  local nfiles row
  nfiles=$(find "$profile_dir" -maxdepth 1 -type f 2> /dev/null | wc -l)
  row="| $case_name/$label | \`$(printf '%q ' "$@" | cut -c 1-60 | sed 's/ *$//; s/|/\\|/g')\` | $status_same | $output_same | (untraced: not checked) | - | $nfiles |"
  echo "$row" > "$CORPUS_ROWS/$case_name.$label.md"
  echo "corpus row: $row"
}

finish() {
  if [ "$failures" -gt 0 ]; then
    echo "$case_name: $failures check(s) failed" >&2
    exit 1
  fi
  echo "$case_name: all checks passed"
  exit 0
}
