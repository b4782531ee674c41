// The streaming merge (issue 23): the sum of inputs folded one at a time
// equals the sum the merge computed before it streamed (kept below as the
// oracle), counts still saturate, the sum stops growing when its inputs
// repeat what it holds, and it says which programs ran how many processes.
#include "report/merge.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "format/pprof.h"
#include "report/input.h"

namespace profiling::report {
namespace {

// The merge as it was before it streamed (commit ba52ed8, report/input.cc),
// unchanged but for its name: every input held at once, samples collected
// and summed after the loop. It is the oracle the streamed sum must equal.
format::Profile old_merge(const std::vector<LoadedProfile>& inputs, std::vector<LoadedProfile>* owned,
                          bool* saturated) {
  format::Profile merged;
  if (saturated) *saturated = false;
  if (inputs.empty()) return merged;
  const LoadedProfile* period_source = nullptr;
  for (const LoadedProfile& input : inputs) {
    uint64_t period = input.profile.period_ns;
    if (period == 0) continue;
    if (!period_source) {
      period_source = &input;
    } else if (period != period_source->profile.period_ns) {
      throw InputError(input.path, "sampling period differs");
    }
  }
  merged.period_ns = period_source ? period_source->profile.period_ns : 0;
  merged.pid = inputs.size() == 1 ? inputs[0].profile.pid : 0;
  merged.clock = inputs[0].profile.clock;
  bool overflow = false;
  for (const LoadedProfile& input : inputs) {
    const format::Profile& p = input.profile;
    if (merged.program.empty()) merged.program = p.program;
    if (p.clock != merged.clock) merged.clock.clear();
    overflow |= format::saturating_add(merged.duration_ns, p.duration_ns);
    overflow |= format::saturating_add(merged.dropped, p.dropped);
    overflow |= format::saturating_add(merged.stacks_dropped, p.stacks_dropped);
    if (p.time_nanos != 0 && (merged.time_nanos == 0 || p.time_nanos < merged.time_nanos))
      merged.time_nanos = p.time_nanos;
  }
  std::map<std::string, size_t> output_mapping;
  const bool label_pids = inputs.size() > 1;
  auto overlaps_any = [&merged](uint64_t start, uint64_t limit) {
    for (const format::Mapping& m : merged.mappings)
      if (start < m.limit && m.start < limit) return true;
    return false;
  };
  for (size_t k = 0; k < inputs.size(); ++k) {
    const format::Profile& p = inputs[k].profile;
    std::vector<size_t> target(p.mappings.size());
    bool moved = false;
    for (size_t i = 0; i < p.mappings.size(); ++i) {
      const format::Mapping& m = p.mappings[i];
      std::string key = (m.build_id.empty() ? "path:" + m.path : "id:" + m.build_id) + "@" +
                        std::to_string(m.file_offset);
      auto [it, inserted] = output_mapping.try_emplace(key, merged.mappings.size());
      if (inserted) {
        format::Mapping placed = m;
        if (overlaps_any(m.start, m.limit)) {
          uint64_t top = 0;
          for (const format::Mapping& other : merged.mappings) top = std::max(top, other.limit);
          placed.start = (top + 0xfffff) & ~uint64_t{0xfffff};
          placed.limit = placed.start + (m.limit - m.start);
        }
        merged.mappings.push_back(placed);
      } else {
        format::Mapping& placed = merged.mappings[it->second];
        uint64_t needed = placed.start + (m.limit - m.start);
        if (needed > placed.limit && !overlaps_any(placed.limit, needed)) placed.limit = needed;
        if (placed.build_id.empty()) placed.build_id = m.build_id;
      }
      target[i] = it->second;
      moved |= merged.mappings[it->second].start != m.start;
    }
    auto relocated = [&](uint64_t address) {
      if (!moved) return address;
      for (size_t i = 0; i < p.mappings.size(); ++i)
        if (p.mappings[i].contains(address)) return address - p.mappings[i].start + merged.mappings[target[i]].start;
      return address;
    };
    format::Profile* mine = owned ? &(*owned)[k].profile : nullptr;
    const int32_t default_pid = label_pids ? static_cast<int32_t>(p.pid) : 0;
    if (mine && !moved && merged.samples.empty() && merged.stacks.empty()) {
      merged.samples = std::move(mine->samples);
      merged.stacks = std::move(mine->stacks);
      for (format::Sample& sample : merged.samples)
        if (sample.pid == 0) sample.pid = default_pid;
    } else {
      std::vector<uint32_t> stack_ids(p.stacks.size() + 1, UINT32_MAX);
      stack_ids[format::StackTable::kNoCallers] = format::StackTable::kNoCallers;
      std::vector<uint64_t> callers;
      merged.samples.reserve(merged.samples.size() + p.samples.size());
      for (const format::Sample& sample : p.samples) {
        uint32_t& stack = stack_ids[sample.stack < stack_ids.size() ? sample.stack : 0];
        if (stack == UINT32_MAX) {
          callers.clear();
          for (uint64_t caller : p.stacks.callers(sample.stack)) callers.push_back(relocated(caller));
          stack = merged.stacks.intern(callers, p.stacks.truncated(sample.stack));
        }
        merged.samples.push_back(
            {relocated(sample.address), sample.count, sample.pid ? sample.pid : default_pid, stack});
      }
    }
    if (mine) {
      std::vector<format::Sample>().swap(mine->samples);
      mine->stacks = format::StackTable();
    }
    if (mine && !moved && merged.frames.empty()) {
      merged.frames = std::move(mine->frames);
    } else {
      for (const auto& [address, frames] : p.frames) merged.frames.try_emplace(relocated(address), frames);
    }
    if (mine) mine->frames.clear();
  }
  overflow |= format::coalesce_samples(&merged.samples);
  if (saturated) *saturated = overflow;
  return merged;
}

// Objects a generated profile maps: two builds of one program (same path,
// other build ids), a library known by build id and one known by path
// alone, each at one of a few bases, so that ASLR moves them between
// profiles, two objects land on one range, and a range grows.
struct Object {
  const char* path;
  const char* build_id;
};
constexpr Object kObjects[] = {{"/usr/bin/prog", "e1"},
                               {"/usr/bin/prog", "e2"},
                               {"/lib/libc.so.6", "c1"},
                               {"/lib/libfoo.so", ""}};
constexpr uint64_t kBases[] = {0x400000, 0x555500000000, 0x7f0000000000, 0x7f0000100000, 0x7f0000200000};

// A profile of one process: a few of the objects at distinct bases,
// samples at a few addresses of each (so that files share leaves and
// stacks), stacks of depth 0 to 4 (some truncated), names for some
// addresses, a pid per profile and some samples labelled with their own.
format::Profile random_profile(std::mt19937_64& random, int64_t pid) {
  auto pick = [&random](size_t n) { return static_cast<size_t>(random() % n); };
  format::Profile p;
  p.program = "/usr/bin/prog";
  p.pid = pid;
  p.period_ns = 1000;
  p.clock = pick(4) == 0 ? "perf" : "cpu";
  p.duration_ns = 1000 + pick(1000);
  p.time_nanos = static_cast<int64_t>(1'700'000'000'000'000'000 + pick(1000));
  p.dropped = pick(3);
  p.stacks_dropped = pick(2);
  std::vector<size_t> bases = {0, 1, 2, 3, 4};
  std::shuffle(bases.begin(), bases.end(), random);
  const size_t objects = 1 + pick(3);
  std::vector<size_t> chosen = {pick(2)};  // one build of the program
  if (objects > 1) chosen.push_back(2);
  if (objects > 2) chosen.push_back(3);
  for (size_t i = 0; i < chosen.size(); ++i) {
    const uint64_t base = kBases[bases[i]];
    const uint64_t size = pick(2) ? 0x10000 : 0x20000;  // a later profile may map more of it
    p.mappings.push_back({base, base + size, pick(3) == 0 ? 0x1000u : 0u, kObjects[chosen[i]].path,
                          kObjects[chosen[i]].build_id});
  }
  auto address = [&] {
    const format::Mapping& m = p.mappings[pick(p.mappings.size())];
    return m.start + 0x10 * (1 + pick(6));
  };
  const size_t samples = 1 + pick(25);
  std::vector<uint64_t> callers;
  for (size_t i = 0; i < samples; ++i) {
    callers.clear();
    const size_t depth = pick(5);
    for (size_t d = 0; d < depth; ++d) callers.push_back(address());
    const uint32_t stack = p.stacks.intern(callers, depth > 0 && pick(5) == 0);
    const int32_t own_pid = pick(6) == 0 ? static_cast<int32_t>(pid + 1 + pick(2)) : 0;
    p.samples.push_back({address(), 1 + pick(1000), own_pid, stack});
    if (pick(3) == 0) p.frames[p.samples.back().address] = {{"f" + std::to_string(pick(50)), "", "", 0}};
  }
  format::coalesce_samples(&p.samples);
  return p;
}

// A profile that does not say which programs it holds is the processes
// its samples name: its own, and those some samples are labelled with.
size_t processes_in(const format::Profile& p) {
  std::set<int64_t> pids;
  for (const format::Sample& s : p.samples) pids.insert(s.pid ? s.pid : p.pid);
  return pids.size();
}

// The program fields are what changed on purpose (compared by their own
// tests); everything else must be as before.
format::Profile without_programs(format::Profile p) {
  p.program.clear();
  p.programs.clear();
  return p;
}

TEST(StreamingMerge, EqualsTheOldMergeOnVariedInputs) {
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    std::mt19937_64 random(seed);
    std::vector<LoadedProfile> inputs;
    const size_t count = 1 + random() % 8;
    for (size_t i = 0; i < count; ++i) {
      // Some files repeat a pid (the same process twice), most have their own.
      const int64_t pid = 100 + static_cast<int64_t>(random() % 5) * 10;
      inputs.push_back({"in" + std::to_string(i), InputKind::pprof, random_profile(random, pid)});
    }
    // Now and then one input is an earlier one again, the same file twice.
    if (count > 2 && random() % 2) inputs.push_back(inputs[random() % count]);

    std::vector<LoadedProfile> owned = inputs;
    bool old_saturated = true, saturated = true;
    const format::Profile expected = old_merge(inputs, &owned, &old_saturated);

    std::vector<LoadedProfile> moved = inputs;
    const format::Profile streamed = merge_profiles(std::move(moved), &saturated);
    ASSERT_EQ(without_programs(streamed), without_programs(expected)) << "seed " << seed;
    EXPECT_EQ(saturated, old_saturated);
    // The copying form sums the same (its stacks may be numbered in
    // another order: compared as stack contents).
    format::Profile copied = merge_profiles(inputs);
    format::Profile canonical = expected;
    format::canonicalize_stacks(&copied);
    format::canonicalize_stacks(&canonical);
    ASSERT_EQ(without_programs(copied), without_programs(canonical)) << "seed " << seed;
    // The inputs the merge consumed keep their names and types.
    EXPECT_EQ(moved.back().path, inputs.back().path);
  }
}

// Summed over the processes, the sum is the old one with every pid
// dropped and the samples that then share (leaf, stack) added up.
TEST(StreamingMerge, SummedOverProcessesIsTheOldMergeWithoutPids) {
  for (uint64_t seed = 1; seed <= 100; ++seed) {
    std::mt19937_64 random(seed);
    std::vector<LoadedProfile> inputs;
    const size_t count = 2 + random() % 6;
    for (size_t i = 0; i < count; ++i)
      inputs.push_back({"in" + std::to_string(i), InputKind::pprof, random_profile(random, 100 + 10 * i)});
    std::vector<LoadedProfile> owned = inputs;
    format::Profile expected = old_merge(inputs, &owned, nullptr);
    for (format::Sample& s : expected.samples) s.pid = 0;
    format::coalesce_samples(&expected.samples);

    ProfileMerger merger(Processes::summed);
    for (const LoadedProfile& input : inputs) merger.add(LoadedProfile(input));
    const format::Profile summed = merger.finish();
    ASSERT_EQ(without_programs(summed), without_programs(expected)) << "seed " << seed;
    size_t processes = 0;
    for (const LoadedProfile& input : inputs) processes += processes_in(input.profile);
    ASSERT_EQ(summed.programs.size(), 1u);
    EXPECT_EQ(summed.programs[0].processes, processes);
  }
}

// One process of `program`: one sample in one object.
format::Profile process_of(const std::string& program, int64_t pid) {
  format::Profile p;
  p.program = program;
  p.pid = pid;
  p.period_ns = 1000;
  p.mappings.push_back({0x1000, 0x2000, 0, program, ""});
  p.samples = {{0x1010, 1, 0, 0}};
  return p;
}

TEST(StreamingMerge, OneInputComesOutAsItWas) {
  std::mt19937_64 random(7);
  format::Profile p = random_profile(random, 4321);
  ProfileMerger merger;
  merger.add(LoadedProfile{"one", InputKind::pprof, p});
  format::Profile sum = merger.finish();
  EXPECT_EQ(sum.pid, 4321);
  EXPECT_EQ(sum.program, "/usr/bin/prog");
  EXPECT_TRUE(sum.programs.empty());
  EXPECT_EQ(sum.samples, p.samples);  // no pid added to the samples without one
}

TEST(StreamingMerge, CountsStillSaturate) {
  format::Profile p = process_of("/bin/x", 7);
  p.samples = {{0x1010, UINT64_MAX - 5, 0, 0}, {0x1020, 1, 0, 0}};
  p.duration_ns = UINT64_MAX / 2 + 1;
  // Two copies of one process: the same (address, pid, stack) twice.
  ProfileMerger merger;
  merger.add(LoadedProfile{"a", InputKind::pprof, p});
  merger.add(LoadedProfile{"b", InputKind::pprof, p});
  bool saturated = false;
  format::Profile sum = merger.finish(&saturated);
  EXPECT_TRUE(saturated);
  ASSERT_EQ(sum.samples.size(), 2u);
  EXPECT_EQ(sum.samples[0].count, UINT64_MAX);
  EXPECT_EQ(sum.samples[1].count, 2u);
  EXPECT_EQ(sum.duration_ns, UINT64_MAX);

  // A sum that does not pass 2^64-1 is not saturated.
  p.samples[0].count = UINT64_MAX / 2;
  p.duration_ns = 1;
  ProfileMerger fits;
  fits.add(LoadedProfile{"a", InputKind::pprof, p});
  fits.add(LoadedProfile{"b", InputKind::pprof, p});
  saturated = true;
  EXPECT_EQ(fits.finish(&saturated).samples[0].count, UINT64_MAX - 1);
  EXPECT_FALSE(saturated);
}

// The first input's samples take its pid only when a second input comes;
// one of them the file already labelled with that pid then meets its
// unlabelled twin, and the two are summed (also past 2^64-1).
TEST(StreamingMerge, TheFirstInputsPidJoinsSamplesLabelledWithIt) {
  format::Profile p = process_of("/bin/x", 42);
  p.samples = {{0x1010, UINT64_MAX - 1, 0, 0}, {0x1010, 3, 42, 0}};
  format::Profile other = p;
  other.pid = 43;
  other.samples = {{0x1010, 1, 0, 0}};
  ProfileMerger merger;
  merger.add(LoadedProfile{"a", InputKind::pprof, p});
  EXPECT_EQ(merger.sizes().samples, 2u);
  merger.add(LoadedProfile{"b", InputKind::pprof, other});
  bool saturated = false;
  format::Profile sum = merger.finish(&saturated);
  EXPECT_TRUE(saturated);
  EXPECT_EQ(sum.samples, (std::vector<format::Sample>{{0x1010, UINT64_MAX, 42, 0}, {0x1010, 1, 43, 0}}));
}

// What the sum holds stops growing when the inputs repeat it: the same
// process's profile again, or the same program loaded elsewhere (ASLR),
// adds counts, not entries. Another process of it adds its samples (they
// keep their pid) and nothing else.
TEST(StreamingMerge, RepeatedInputsDoNotGrowTheSum) {
  std::mt19937_64 random(11);
  const format::Profile p = random_profile(random, 500);
  ProfileMerger merger;
  merger.add(LoadedProfile{"0", InputKind::pprof, p});
  merger.add(LoadedProfile{"1", InputKind::pprof, p});
  const ProfileMerger::Sizes after_two = merger.sizes();
  EXPECT_GT(after_two.samples, 0u);
  EXPECT_EQ(after_two.mappings, p.mappings.size());
  for (int i = 2; i < 300; ++i) {
    merger.add(LoadedProfile{std::to_string(i), InputKind::pprof, p});
    ASSERT_EQ(merger.sizes(), after_two) << "input " << i;
  }
  // The same objects at other addresses: moved onto the ranges they have.
  format::Profile elsewhere = p;
  for (format::Mapping& m : elsewhere.mappings) {
    m.start += 0x100000000000;
    m.limit += 0x100000000000;
  }
  auto shift = [](uint64_t a) { return a + 0x100000000000; };
  for (format::Sample& s : elsewhere.samples) s.address = shift(s.address);
  format::StackTable shifted;
  std::vector<uint32_t> ids(p.stacks.size() + 1, 0);
  for (uint32_t id = 1; id <= p.stacks.size(); ++id) {
    std::vector<uint64_t> callers;
    for (uint64_t c : p.stacks.callers(id)) callers.push_back(shift(c));
    ids[id] = shifted.intern(callers, p.stacks.truncated(id));
  }
  for (format::Sample& s : elsewhere.samples) s.stack = ids[s.stack];
  elsewhere.stacks = shifted;
  std::map<uint64_t, std::vector<format::Frame>> frames;
  for (const auto& [address, named] : p.frames) frames[shift(address)] = named;
  elsewhere.frames = frames;
  for (int i = 0; i < 20; ++i) merger.add(LoadedProfile{"aslr", InputKind::pprof, elsewhere});
  EXPECT_EQ(merger.sizes(), after_two);

  // Another process: its samples are its own (pid), nothing else is new.
  format::Profile another = p;
  another.pid = 501;
  merger.add(LoadedProfile{"other", InputKind::pprof, another});
  ProfileMerger::Sizes sizes = merger.sizes();
  EXPECT_GT(sizes.samples, after_two.samples);
  sizes.samples = after_two.samples;
  EXPECT_EQ(sizes, after_two);
  format::Profile sum = merger.finish();
  ASSERT_EQ(sum.programs.size(), 1u);
  EXPECT_EQ(sum.programs[0].processes, 320 * processes_in(p) + processes_in(another));
}

// Summed over the processes, other processes of the same program add
// nothing to the sum either: it is bounded by its distinct stacks.
TEST(StreamingMerge, SummedProcessesDoNotGrowTheSum) {
  std::mt19937_64 random(12);
  const format::Profile p = random_profile(random, 500);
  ProfileMerger merger(Processes::summed);
  merger.add(LoadedProfile{"0", InputKind::pprof, p});
  merger.add(LoadedProfile{"1", InputKind::pprof, p});
  const ProfileMerger::Sizes after_two = merger.sizes();
  for (int i = 2; i < 300; ++i) {
    format::Profile another = p;
    another.pid = 500 + i;
    for (format::Sample& s : another.samples)
      if (s.pid) s.pid = static_cast<int32_t>(another.pid);  // labels of its own, too
    merger.add(LoadedProfile{std::to_string(i), InputKind::pprof, std::move(another)});
    ASSERT_EQ(merger.sizes(), after_two) << "input " << i;
  }
  const format::Profile sum = merger.finish();
  // Each copy is its process alone (its labels are its own pid); the
  // first two, p, are the processes p names.
  const uint64_t processes = 298 + 2 * processes_in(p);
  EXPECT_EQ(sum.programs, (std::vector<format::ProgramProcesses>{{"/usr/bin/prog", processes}}));
  EXPECT_EQ(sum.program, "prog (" + std::to_string(processes) + " processes)");
  EXPECT_EQ(sum.total_count(), 300 * p.total_count());
}

TEST(StreamingMerge, SaysWhichProgramsAndHowManyProcesses) {
  ProfileMerger merger;
  merger.add(LoadedProfile{"1", InputKind::pprof, process_of("/bin/sh", 1)});
  for (int pid = 2; pid <= 4; ++pid)
    merger.add(LoadedProfile{std::to_string(pid), InputKind::pprof, process_of("/usr/bin/python3.11", pid)});
  format::Profile sum = merger.finish();
  EXPECT_EQ(sum.programs, (std::vector<format::ProgramProcesses>{{"/bin/sh", 1}, {"/usr/bin/python3.11", 3}}));
  EXPECT_EQ(sum.program, "python3.11 (3 processes), sh (1)");
  EXPECT_EQ(sum.pid, 0);

  // The file says so, and a sum of sums adds the processes up.
  format::Profile read = format::decode_pprof(format::encode_pprof(sum));
  EXPECT_EQ(read.programs, sum.programs);
  EXPECT_EQ(read.program, sum.program);
  ProfileMerger again;
  again.add(LoadedProfile{"sum", InputKind::pprof, read});
  again.add(LoadedProfile{"5", InputKind::pprof, process_of("/bin/sh", 5)});
  format::Profile total = again.finish();
  EXPECT_EQ(total.programs, (std::vector<format::ProgramProcesses>{{"/bin/sh", 2}, {"/usr/bin/python3.11", 3}}));
  EXPECT_EQ(total.program, "python3.11 (3 processes), sh (2)");

  // A file of several processes that does not say which programs (an
  // older profil run's shared file) counts the pids its samples carry.
  format::Profile shared = process_of("", 0);
  shared.samples = {{0x1010, 1, 70, 0}, {0x1018, 1, 71, 0}, {0x1020, 1, 70, 0}};
  ProfileMerger legacy;
  legacy.add(LoadedProfile{"shared", InputKind::pprof, shared});
  legacy.add(LoadedProfile{"6", InputKind::pprof, process_of("/bin/sh", 6)});
  EXPECT_EQ(legacy.finish().programs, (std::vector<format::ProgramProcesses>{{"", 2}, {"/bin/sh", 1}}));
}

// The snapshots of one process (--every: one profile per interval, each
// with the process's pid, the windows joined end to start) sum to one
// process, not one per file (issue 35: "(4 processes)"), in whatever order
// they come; the same pid after a gap is another process (pids are reused).
format::Profile window_of(format::Profile p, int64_t start_s, int64_t end_s) {
  p.time_nanos = start_s * 1'000'000'000;
  p.duration_ns = static_cast<uint64_t>((end_s - start_s) * 1'000'000'000);
  return p;
}

TEST(StreamingMerge, CountsSnapshotsOfOneProcessAsOneProcess) {
  const format::Profile spin = process_of("/usr/bin/spin", 7);
  ProfileMerger merger;
  for (int start : {10, 12, 11, 13})
    merger.add(LoadedProfile{"spin.7.s" + std::to_string(start), InputKind::pprof, window_of(spin, start, start + 1)});
  merger.add(LoadedProfile{"sh.8", InputKind::pprof, process_of("/bin/sh", 8)});
  format::Profile sum = merger.finish();
  EXPECT_EQ(sum.programs, (std::vector<format::ProgramProcesses>{{"/usr/bin/spin", 1, 4}, {"/bin/sh", 1}}));
  EXPECT_EQ(sum.program, "spin (4 snapshots of 1 process), sh (1)");

  // pid 7 twice, with a gap between: two processes of the one pid; pid 9
  // in three snapshots.
  ProfileMerger two;
  for (auto [pid, start] : std::vector<std::pair<int, int>>{{7, 10}, {7, 20}, {9, 10}, {9, 11}, {9, 12}})
    two.add(LoadedProfile{std::to_string(pid), InputKind::pprof,
                          window_of(process_of("/usr/bin/spin", pid), start, start + 1)});
  EXPECT_EQ(two.finish().program, "spin (5 snapshots of 3 processes)");
}

TEST(StreamingMerge, DescribesProgramsForAReader) {
  using format::describe_programs;
  EXPECT_EQ(describe_programs({{"/bin/sh", 1}}), "sh (1 process)");
  // Two programs of one file name are told apart by their paths.
  EXPECT_EQ(describe_programs({{"/usr/bin/python3", 2}, {"/opt/bin/python3", 5}, {"", 1}}),
            "/opt/bin/python3 (5 processes), /usr/bin/python3 (2), [unknown program] (1)");
  std::vector<format::ProgramProcesses> many;
  for (int i = 0; i < 13; ++i) many.push_back({"/bin/p" + std::to_string(i), static_cast<uint64_t>(20 - i)});
  const std::string text = describe_programs(many);
  EXPECT_EQ(text.substr(0, 20), "p0 (20 processes), p");
  EXPECT_NE(text.find("p9 (11) and 3 more programs (27)"), std::string::npos) << text;
}

TEST(StreamingMerge, RefusesAnotherPeriodAndKeepsTheSum) {
  format::Profile fast = process_of("/bin/sh", 1), slow = process_of("/bin/sh", 2);
  slow.period_ns = 2000;
  ProfileMerger merger;
  merger.add(LoadedProfile{"fast.pb.gz", InputKind::pprof, fast});
  merger.add(LoadedProfile{"again.pb.gz", InputKind::pprof, fast});
  const ProfileMerger::Sizes before = merger.sizes();
  try {
    merger.add(LoadedProfile{"slow.pb.gz", InputKind::pprof, slow});
    FAIL() << "summed profiles of different rates";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "slow.pb.gz");
    EXPECT_NE(std::string(e.what()).find("fast.pb.gz's 1000 ns"), std::string::npos) << e.what();
  }
  EXPECT_EQ(merger.inputs(), 2u);
  EXPECT_EQ(merger.sizes(), before);
}

}  // namespace
}  // namespace profiling::report

namespace profiling::report {
namespace {

// The timeline (issue 33) of several files is one, in time order: each
// sample relocated with its object, labelled with its process (apart) or
// not (summed), its chain in the sum's own timeline table.
TEST(StreamingMerge, TimelinesMergeInTimeOrder) {
  auto with_times = [](const std::string& program, int64_t pid, uint64_t start, std::vector<int64_t> times) {
    format::Profile p = process_of(program, pid);
    p.mappings = {{start, start + 0x1000, 0, program, ""}};
    const std::vector<uint64_t> callers = {start + 0x20};
    p.samples = {{start + 0x10, times.size(), 0, p.stacks.intern(callers, false), 5}};
    const uint32_t stack = p.timeline.stacks.intern(callers, false);
    for (int64_t t : times) p.timeline.samples.push_back({t, start + 0x10, 1, stack, 5});
    return p;
  };
  for (Processes processes : {Processes::apart, Processes::summed}) {
    ProfileMerger merger(processes);
    merger.add(LoadedProfile{"a", InputKind::pprof, with_times("/bin/a", 41, 0x1000, {100, 300})});
    // Another object where /bin/a is: moved above it.
    merger.add(LoadedProfile{"b", InputKind::pprof, with_times("/bin/b", 42, 0x1000, {200, 400})});
    const format::Profile sum = merger.finish();
    ASSERT_EQ(sum.timeline.samples.size(), 4u);
    std::vector<int64_t> times;
    for (const format::TimedSample& t : sum.timeline.samples) {
      times.push_back(t.time_ns);
      const bool from_b = t.time_ns == 200 || t.time_ns == 400;
      const format::Mapping* m = sum.mapping_for(t.address);
      ASSERT_NE(m, nullptr);
      EXPECT_EQ(m->path, from_b ? "/bin/b" : "/bin/a");
      const auto callers = sum.timeline.stacks.callers(t.stack);
      ASSERT_EQ(callers.size(), 1u);
      EXPECT_EQ(callers[0], t.address + 0x10);  // relocated with its leaf
      EXPECT_EQ(t.pid, processes == Processes::apart ? (from_b ? 42 : 41) : 0);
      EXPECT_EQ(t.tid, processes == Processes::apart ? 5 : 0);
    }
    EXPECT_EQ(times, (std::vector<int64_t>{100, 200, 300, 400}));
  }
}

}  // namespace
}  // namespace profiling::report
