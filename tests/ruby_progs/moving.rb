# A Ruby stack that changes every few microseconds (issue 34, at the
# sample or not; tests/python_progs/moving.py's Ruby twin): a recursion 0
# to 40 levels deep, each level through a C method calling a block back
# (Array#each: one more native rb_vm_exec per level), ending in one of two
# short leaves, alternating, so that a stack read even a little after its
# sample is likely another depth. Runs for the CPU seconds given.

def cpu
  Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID)
end

def leaf_a
  1 + 2
end

def leaf_b
  3 * 4
end

def down(depth, leaf)
  return (leaf == :a ? leaf_a : leaf_b) if depth.zero?
  [depth - 1].each { |d| down(d, leaf) }
end

finish = cpu + Float(ARGV[0])
while cpu < finish
  0.step(39, 3) do |depth|
    down(depth, :a)
    down(40 - depth, :b)
  end
end
