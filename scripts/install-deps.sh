#!/usr/bin/env bash
# Installs the Debian 12 packages profil builds, tests and benchmarks with;
# with "demo", only those `make demo` builds and runs with (the libraries,
# and what configuring asks for). Only what is missing is installed, so a
# machine that has them all is left alone.
set -euo pipefail
demo_packages=(
  build-essential cmake pkg-config binutils
  libelf-dev libdw-dev libdebuginfod-dev zlib1g-dev libiberty-dev
  libprotobuf-dev protobuf-compiler golang-github-google-pprof-dev
  libcli11-dev libfmt-dev libre2-dev
  # issue 31: the BPF program that reads Python frames at the sample
  clang libbpf-dev bpftool
  libgtest-dev libgmock-dev libbenchmark-dev
  # issue 33: profil top's terminal
  libncurses-dev
)
packages=(
  "${demo_packages[@]}"
  # issue 23: a local debuginfod server for the debuginfod test
  debuginfod
  valgrind bc linux-perf
  # issue 23: inline frames in clang's DWARF (functions inside namespaces)
  clang
  groff-base man-db mandoc
  chromium
  # the real-program corpus (tests/corpus): programs run under profil run
  coreutils bash xz-utils sqlite3 python3 make golang-go imagemagick
  # issue 20: programs with their own timers, tracers, signal stacks
  strace gdb ruby
  # issue 21, bench/same_run.sh (golang-go above): sudo, a postgres server
  sudo postgresql
  # issue 33: profil top's test drives it through a real terminal
  tmux
)
[ "${1:-}" = demo ] && packages=("${demo_packages[@]}")
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
# The build runs npm ci for the HTML report's flame graph (web/). Asked for
# by command, not by package: a Node.js installed from elsewhere carries its
# own npm, and Debian's npm package would conflict with it.
command -v npm > /dev/null && command -v node > /dev/null || missing+=(nodejs npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
