# Sourced by the benchmarks (bench/lib is no benchmark: bench/run.sh runs
# the scripts of bench/ alone): how a run's CPU, a median and a profile's
# samples are taken, the same way in each.

cpu_of() {  # user+sys of the command and its children, in seconds
  local TIMEFORMAT='%U %S'
  { time "$@" >/dev/null 2>&1; } 2>&1 | awk '{ printf "%.4f\n", $1 + $2 }'
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

samples_of() {  # samples in the profiles of a directory ($profil: the tool)
  "$profil" report --format json "$1"/*.pb.gz 2>/dev/null | sed -n 's/.*"summary":{"samples":\([0-9]*\).*/\1/p' | head -1
}
