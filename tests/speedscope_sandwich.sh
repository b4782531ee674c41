# Sourced by the tests that open a file in speedscope (report_speedscope.sh,
# report_timeline.sh), after server_work_dir.sh and with $chromium and
# fail(): speedscope_sandwich FILE DOM loads FILE (in the work directory)
# into speedscope (release directory $speedscope) in headless Chromium and
# writes its sandwich view's DOM to DOM.
speedscope_sandwich() {
  local file=$1 dom=$2 port budget
  [ -e speedscope ] || ln -s "$speedscope" speedscope
  if [ -z "$server" ]; then
    # A server the kernel gives a free port (bound to port 0, which it prints).
    /usr/bin/python3 -c '
import functools, http.server, sys
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
    functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1]))
print(server.server_address[1], flush=True)
server.serve_forever()' "$work" > port 2> server.log &
    server=$!
    for _ in $(seq 100); do [ -s port ] && break; sleep 0.1; done
  fi
  port=$(cat port)
  [ -n "$port" ] || fail "the HTTP server did not start: $(cat server.log)"
  # Virtual time: the page's timers run at once, so the dump waits for the
  # profile to be fetched, imported and drawn, not for the wall clock. The
  # sandwich table draws its rows in a later frame than its header (a
  # virtualized list, after it measures itself); beside other tests' load
  # one dump in several came before them (the header alone, no row). The
  # page is read again, with more virtual time, until it shows rows: a wait
  # for the page to be ready, at most 4 loads; what the rows say is checked
  # by the caller as strictly as ever.
  for budget in 10000 20000 40000 80000; do
    timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking \
      --disable-component-update --disable-sync --user-data-dir="$work/chromium-profile" --window-size=1200,900 \
      --virtual-time-budget=$budget --dump-dom \
      "http://127.0.0.1:$port/speedscope/index.html#profileURL=http://127.0.0.1:$port/$file&view=sandwich" \
      > "$dom" 2> /dev/null || fail "chromium failed"
    grep -q '<tr[^>]*><td' "$dom" && break
  done
}
