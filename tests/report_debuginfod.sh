#!/usr/bin/env bash
# profil report fetches debug files from debuginfod servers (DEBUGINFOD_URLS):
# a local debuginfod(8) on 127.0.0.1 serves the debug file of a stripped
# program; its functions are named with the server and only with it, a
# progress line says what is being fetched, and the client's cache
# (DEBUGINFOD_CACHE_PATH) names them again once the server is gone.
#   report_debuginfod.sh <profil> <fixture dir>
set -euo pipefail
profil=$1 fixtures=$2
command -v debuginfod > /dev/null || { echo "FAIL: debuginfod(8) missing (Debian: debuginfod, scripts/install-deps.sh)" >&2; exit 1; }
. "$(dirname "$0")/server_work_dir.sh"
fail() { echo "FAIL: $*" >&2; exit 1; }
report() { NO_COLOR=1 "$profil" report "$@"; }
unset DEBUGINFOD_URLS DEBUGINFOD_PROGRESS DEBUGINFOD_VERBOSE
export DEBUGINFOD_CACHE_PATH=$work/cache

# The stripped program; its debug file (same build id) only on the server.
cp "$fixtures/report_fixture_pie_stripped" prog
mkdir served
cp "$fixtures/report_fixture_pie_linked.debug" served/prog.debug
id=$(readelf -n prog | awk '/Build ID:/ { print $3 }')
[ ${#id} -eq 40 ] || fail "no build id in the fixture"
"$profil" run --no-symbolize -o bare -- "$work/prog" burn 3000 0 2> /dev/null
profile=$(echo bare/prog.*.pb.gz)
[ -f "$profile" ] || fail "profil run wrote no profile: $(ls bare)"

report "$profile" > without.txt 2> without.err
if grep -q ' hot_inner' without.txt; then cat without.txt; fail "hot_inner named without a server"; fi

# A free port: the kernel picks one for a socket bound to port 0; another
# program may take it before the server does, so a server that exits at
# once is started again on another.
free_port() { /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# One HTTP request's status code ("200"), "" when nothing answers.
http_status() {
  local status=
  if { exec 3<> "/dev/tcp/127.0.0.1/$1"; } 2> /dev/null; then
    printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' "$2" >&3
    read -r -t 30 _ status _ <&3 || true
    exec 3<&- 3>&-
  fi
  echo "$status"
}
# The server answers the build id only once its scan of served/ has indexed
# the file: poll it (up to two minutes on a busy machine).
for attempt in 1 2 3 4 5; do
  port=$(free_port)
  debuginfod -d "$work/index.sqlite" -p "$port" -F "$work/served" > "server.$attempt.log" 2>&1 &
  server=$!
  deadline=$((SECONDS + 120))
  status=
  while [ $SECONDS -lt $deadline ] && kill -0 "$server" 2> /dev/null; do
    status=$(http_status "$port" "/buildid/$id/debuginfo")
    [ "$status" = 200 ] && break
    sleep 0.2
  done
  [ "$status" = 200 ] && break
  kill "$server" 2> /dev/null || true
  wait "$server" 2> /dev/null || true
  server=
done
[ -n "$server" ] || { cat server.*.log >&2; fail "debuginfod never served the debug file"; }

export DEBUGINFOD_URLS=http://127.0.0.1:$port
report "$profile" > with.txt 2> with.err
cat with.txt with.err
grep -q ' hot_inner' with.txt || fail "hot_inner not named with the server"
grep -q "profil: debuginfod: fetching the debug file of .*prog" with.err || fail "no progress line: $(cat with.err)"
grep -q "debug file found" with.err || fail "no line saying the debug file was found: $(cat with.err)"
ls "$DEBUGINFOD_CACHE_PATH/$id/debuginfo" > /dev/null || fail "nothing in the debuginfod cache"

# Served from the cache once the server is gone, without a progress line.
kill "$server"
wait "$server" 2> /dev/null || true
server=
report "$profile" > cached.txt 2> cached.err
grep -q ' hot_inner' cached.txt || fail "hot_inner not named from the cache"
if grep -q "fetching" cached.err; then fail "fetched again: $(cat cached.err)"; fi
echo "PASS"
