# Sourced by the tests that start a local server (report_debuginfod.sh,
# report_speedscope.sh): a work directory to cd into, and $server, the
# server's pid once started, stopped and waited for with the directory
# removed however the test ends.
work=$(mktemp -d)
server=
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2> /dev/null || true; wait "$server" 2> /dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
cd "$work"
