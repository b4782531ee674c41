# A Ruby program whose output and exit status profil must not change
# (issue 34): deterministic lines on stdout and stderr, through methods,
# blocks and a C method calling back into Ruby, and exit status 3.
def collatz(n)
  steps = 0
  while n != 1
    n = n.even? ? n / 2 : 3 * n + 1
    steps += 1
  end
  steps
end

longest = (1..60_000).map { |n| [collatz(n), n] }.max
puts "longest #{longest[1]} #{longest[0]}"
words = %w[ruby frames merged in place].each_with_index.map { |w, i| w * (i + 1) }
puts words.join(" ")
warn "checksum #{words.sum(&:size) + longest.sum}"
exit 3
