# Two methods whose work is 3 : 1 by construction (the same small-integer
# loop, three times as many iterations), and a path through C (Array#map,
# C, calling back into a Ruby block), for profil's Ruby frames (issue 34).
# Runs for the CPU seconds given, after timing each method alone, and
# prints "timed_three F": three's share of the pair's time, timed.

def cpu
  Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID)
end

def small_int_work(n)
  total = 0
  i = 0
  while i < n
    total += i % 7
    i += 1
  end
  total
end

def three
  small_int_work(300_000)
end

def one
  small_int_work(100_000)
end

def keyed(x)
  small_int_work(1000) + x % 5
end

def c_path
  ITEMS.map { |x| keyed(x) }
end

def timed(calls)
  start = cpu
  calls.times { yield }
  cpu - start
end

ITEMS = (0...100).to_a
seconds = Float(ARGV[0])
t3 = timed(20) { three }
t1 = timed(20) { one }
$stdout.write(format("timed_three %.4f\n", t3 / (t3 + t1)))
$stdout.flush
finish = cpu + seconds
while cpu < finish
  three
  one
  c_path
end
