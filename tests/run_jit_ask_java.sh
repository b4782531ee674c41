#!/usr/bin/env bash
# profil run --jit and profil attach --jit on a JVM (issue 34,
# tools/profil/jit_ask.h, jvm_attach.h): the JVM is asked for its perf map
# through its attach mechanism while it runs (never JAVA_TOOL_OPTIONS: no
# "Picked up" line on its stderr), and the run says so. Targets: the
# workload's hot methods (JitWork.heavy, three times JitWork.light's work)
# named, and >= 90 % of the samples in JIT code; the program's output its
# own. JitWork.java is compiled here, into the build directory.
# Usage: run_jit_ask_java.sh PROFIL JitWork.java CLASS_DIR
set -euo pipefail
profil=$1 source=$2 classes=$3
here=$(cd "$(dirname "$0")" && pwd)
command -v java > /dev/null && command -v javac > /dev/null || { echo "no java/javac: skipped"; exit 77; }
mkdir -p "$classes"
[ "$classes/JitWork.class" -nt "$source" ] || javac -d "$classes" "$source"
dir=$(mktemp -d)
java_pid=
trap '[ -n "$java_pid" ] && kill "$java_pid" 2> /dev/null; rm -rf "$dir"' EXIT
expected=$(java -cp "$classes" JitWork 0.1)

# check WHAT CSV MIN: the JIT samples named, the hot methods named.
check() {
  read -r all jit named heavy light < <(python3 "$here/jit_shares.py" "$2" "JitWork.heavy" "JitWork.light")
  echo "$1: $all samples, $jit in JIT code, $named of them named; heavy $heavy, light $light"
  [ "$all" -ge "$3" ] || { echo "too few samples"; exit 1; }
  [ $((named * 100)) -ge $((jit * 90)) ] || { echo "fewer than 90 % of the JIT samples named"; head -8 "$2"; exit 1; }
  [ "$heavy" -gt "$light" ] && [ "$light" -gt 0 ] || { echo "the hot methods are not named as they ran"; head -8 "$2"; exit 1; }
}

"$profil" run --jit --hz 1000 -o "$dir/run" -- java -cp "$classes" JitWork 2 > "$dir/stdout" 2> "$dir/err" ||
  { cat "$dir/err"; exit 1; }
[ "$(cat "$dir/stdout")" = "$expected" ] || { echo "the program's output changed: $(cat "$dir/stdout")"; exit 1; }
! grep -q "Picked up" "$dir/err" || { echo "the JVM was started with options:"; cat "$dir/err"; exit 1; }
grep -E "^profil: --jit: java \(pid [0-9]+\): asked for its perf map [0-9]+ times? .*Attach Listener" "$dir/err" ||
  { echo "the run does not say it asked the JVM:"; cat "$dir/err"; exit 1; }
pid=$(ls "$dir/run" | sed -n 's/^perf-\([0-9]*\)\.map$/\1/p' | head -1)
[ -n "$pid" ] || { echo "no perf-PID.map kept in the output directory:"; ls "$dir/run"; exit 1; }
rm -f "/tmp/perf-$pid.map"
"$profil" report --format csv "$dir/run/java.$pid.pb.gz" > "$dir/run.csv"
check "profil run --jit" "$dir/run.csv" 1000

# A JVM that would be harmed by the ask is not asked, and the run says why:
# under -Xrs SIGQUIT would end it, with its attach mechanism disabled it
# would print its threads' stacks on its stdout.
for option in -Xrs -XX:+DisableAttachMechanism; do
  "$profil" run --jit -o "$dir/not" -- java "$option" -cp "$classes" JitWork 0.5 > "$dir/stdout" 2> "$dir/err" ||
    { echo "java $option under --jit:"; cat "$dir/err"; exit 1; }
  [ "$(cat "$dir/stdout")" = "$expected" ] || { echo "java $option: the output changed:"; cat "$dir/stdout"; exit 1; }
  grep -E "^profil: --jit: java \(pid [0-9]+\): its perf map could not be had: (it does not catch SIGQUIT|its attach mechanism is disabled)" "$dir/err" ||
    { echo "java $option: the run does not say why the JVM was not asked:"; cat "$dir/err"; exit 1; }
done

# attach: a JVM running on its own, asked while attached and at the end.
java -cp "$classes" JitWork 6 > "$dir/attached.out" &
java_pid=$!
# Once the JVM catches SIGQUIT (its handlers installed) it can be asked.
for _ in $(seq 200); do
  grep -q "^SigCgt:.*[4-7cdefCDEF]$" "/proc/$java_pid/status" 2> /dev/null && break
  sleep 0.05
done
"$profil" attach --jit --hz 1000 --duration 3 -o "$dir/attach" "$java_pid" 2> "$dir/attach.err" ||
  { cat "$dir/attach.err"; exit 1; }
grep -E "^profil: --jit: java \(pid $java_pid\): asked for its perf map" "$dir/attach.err" ||
  { echo "attach does not say it asked the JVM:"; cat "$dir/attach.err"; exit 1; }
grep -q "Attach Listener" "/proc/$java_pid/task/"*/comm ||
  { echo "the JVM has no Attach Listener thread"; exit 1; }
wait "$java_pid"
rm -f "/tmp/perf-$java_pid.map"
java_pid=
[ "$(cat "$dir/attached.out")" = "$expected" ] || { echo "the attached program's output changed"; exit 1; }
"$profil" report --format csv "$dir/attach/"java.*.pb.gz > "$dir/attach.csv"
# 3 s of wall time: fewer samples on a busy machine.
check "profil attach --jit" "$dir/attach.csv" 100
