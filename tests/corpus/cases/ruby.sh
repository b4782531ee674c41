#!/usr/bin/env bash
# Ruby (issue 20): its VM installs a 16 KiB alternate signal stack from
# malloc and a timer thread of its own. `profil run -- ruby work.rb` (two
# threads, a hash, strings, a sort) crashed with "[BUG] Segmentation
# fault" (front_dispatch of libprofil in Ruby's backtrace) or "free():
# invalid pointer", 14 of 14 runs, on every clock, with or without stacks.
source "$(dirname "$0")/../lib.sh"
skip_without ruby
cat > "$work/in/work.rb" <<'RB'
def work(seed)
  h = {}
  40_000.times { |i| h["key#{(i * seed) % 30_011}"] = (i * 7919 + seed).to_s * 3 }
  words = h.values.map { |v| v.reverse + v[0, 5] }
  sorted = words.sort
  [h.size, sorted.first, sorted.last, sorted.map(&:length).sum]
end

results = []
threads = [1, 3].map { |seed| Thread.new(seed) { |s| work(s) } }
threads.each { |t| results << t.value }
results << work(5)
results.each { |r| puts r.inspect }
timed_out = begin
  Timeout rescue require "timeout"
  Timeout.timeout(0.2) { loop { [3, 1, 2].sort } }
  false
rescue Timeout::Error
  true
end
puts "timeout #{timed_out}"
RB
while read -r clock; do
  compare "ruby_threads_$(clock_label "$clock")" --run-args "--clock $clock" -- ruby work.rb
  [ "$plain_exit" = 0 ] || fail "ruby failed without profil (status $plain_exit)"
done < <(clock_runs)
finish
