#include "format/profraw.h"

#include <cstdint>
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "format/format_error.h"


namespace profiling::format {
namespace {

const char kMaps[] =
    "55d0c0a00000-55d0c0a01000 r--p 00000000 08:01 1234                       /usr/bin/prog\n"
    "55d0c0a01000-55d0c0a05000 r-xp 00001000 08:01 1234                       /usr/bin/prog\n"
    "7f0000000000-7f0000010000 r-xp 00002000 08:01 99                         /usr/lib/lib with space.so\n"
    "7f0000100000-7f0000101000 rwxp 00000000 00:00 0 \n"
    "7ffd1d3f0000-7ffd1d3f2000 r-xp 00000000 00:00 0                          [vdso]\n";

// A dump's header, whatever its size (the struct zero beyond it), and the
// same written back over its header_size bytes.
profraw::Header header_of(const std::string& bytes) {
  profraw::Header h{};
  uint32_t size = 0;
  std::memcpy(&size, bytes.data() + offsetof(profraw::Header, header_size), sizeof size);
  std::memcpy(&h, bytes.data(), std::min<size_t>(size, sizeof h));
  return h;
}
void put_header(std::string* bytes, const profraw::Header& h) { std::memcpy(bytes->data(), &h, h.header_size); }

// Version 4 unless asked: most tests are of what versions 4 and 5 share,
// and version 4's samples compare without observations (a 224-byte header
// before version 6).
std::string make_raw(const std::string& program, std::vector<profraw::Pair> pairs, const std::string& maps,
                     uint32_t version = 4) {
  profraw::Header h{};
  std::memcpy(h.magic, profraw::kMagic, 8);
  h.version = version;
  h.header_size = version >= 6 ? sizeof h : profraw::kHeaderSizeV5;
  h.pid = 42;
  h.ppid = 7;
  h.clock = 1;
  h.hz = 1000;
  h.period_ns = 1'000'000;
  h.start_ns = 1'000'000'000;
  h.end_ns = 3'500'000'000;
  h.dropped = 5;
  h.end_reason = static_cast<uint32_t>(profraw::EndReason::signal);
  h.signal = 11;
  h.sample_count = pairs.size();
  h.program_length = static_cast<uint32_t>(program.size());
  h.maps_length = maps.size();
  h.cpu_ns = 2'000'000'000;
  h.signals = 1999;
  std::strcpy(h.run_id, "run-1");
  std::string bytes(reinterpret_cast<const char*>(&h), h.header_size);
  bytes += program;
  for (const profraw::Pair& pair : pairs)
    bytes.append(reinterpret_cast<const char*>(&pair), version >= 5 ? sizeof pair : profraw::kPairSizeV4);
  bytes += maps;
  return bytes;
}

TEST(Profraw, ReadsEveryField) {
  const std::string bytes = make_raw("/usr/bin/prog", {{0x55d0c0a01010, 7}, {0x7f0000000100, 3}, {0x55d0c0a01000, 2}}, kMaps);
  ProfrawData data = read_profraw(bytes);
  const Profile& p = data.profile;
  EXPECT_EQ(p.program, "/usr/bin/prog");
  EXPECT_EQ(p.pid, 42);
  EXPECT_EQ(data.ppid, 7);
  EXPECT_EQ(p.clock, "perf");
  EXPECT_EQ(data.hz, 1000u);
  EXPECT_EQ(p.period_ns, 1'000'000u);
  EXPECT_EQ(p.time_nanos, 1'000'000'000);
  EXPECT_EQ(p.duration_ns, 2'500'000'000u);
  EXPECT_EQ(p.dropped, 5u);
  EXPECT_EQ(data.end_reason, profraw::EndReason::signal);
  EXPECT_EQ(data.signal, 11u);
  EXPECT_EQ(data.cpu_ns, 2'000'000'000u);
  EXPECT_EQ(data.signals, 1999u);
  EXPECT_EQ(data.run_id, "run-1");
  EXPECT_EQ(data.maps, kMaps);
  // Samples sorted by address.
  ASSERT_EQ(p.samples.size(), 3u);
  EXPECT_EQ(p.samples[0], (Sample{0x55d0c0a01000, 2}));
  EXPECT_EQ(p.samples[1], (Sample{0x55d0c0a01010, 7}));
  EXPECT_EQ(p.samples[2], (Sample{0x7f0000000100, 3}));
  EXPECT_EQ(p.total_count(), 12u);
  // Executable mappings only, the program first.
  ASSERT_EQ(p.mappings.size(), 4u);
  EXPECT_EQ(p.mappings[0].path, "/usr/bin/prog");
  EXPECT_EQ(p.mappings[0].start, 0x55d0c0a01000u);
  EXPECT_EQ(p.mappings[0].limit, 0x55d0c0a05000u);
  EXPECT_EQ(p.mappings[0].file_offset, 0x1000u);
  EXPECT_EQ(p.mappings[1].path, "/usr/lib/lib with space.so");
  EXPECT_EQ(p.mappings[1].file_offset, 0x2000u);
  EXPECT_EQ(p.mappings[2].path, "[anon]");
  EXPECT_EQ(p.mappings[3].path, "[vdso]");
  EXPECT_EQ(p.mapping_for(0x7f0000000100)->path, "/usr/lib/lib with space.so");
  EXPECT_EQ(decode_profraw(bytes), p);
}

// Version 1 (before the unsampled records): a 176-byte header, nothing
// after the maps. Old dumps still read.
std::string make_v1(const std::string& program, std::vector<profraw::Pair> pairs, const std::string& maps) {
  std::string v2 = make_raw(program, pairs, maps);
  profraw::Header h = header_of(v2);
  h.version = 1;
  h.header_size = profraw::kHeaderSizeV1;
  std::string bytes(reinterpret_cast<const char*>(&h), profraw::kHeaderSizeV1);
  return bytes + v2.substr(profraw::kHeaderSizeV5);
}

TEST(Profraw, Version1StillReads) {
  const std::string bytes = make_v1("/usr/bin/prog", {{0x55d0c0a01010, 7}}, kMaps);
  ProfrawData data = read_profraw(bytes);
  EXPECT_EQ(data.profile.program, "/usr/bin/prog");
  EXPECT_EQ(data.profile.total_count(), 7u);
  EXPECT_EQ(data.maps, kMaps);
  EXPECT_EQ(data.run_id, "run-1");
  EXPECT_EQ(data.start_clock, "perf");
  EXPECT_TRUE(data.unsampled.empty());
  EXPECT_THROW(read_profraw(bytes + "x"), FormatError);
}

// Version 2 (before the stacks): a 184-byte header, nothing after the
// unsampled records.
std::string make_v2(const std::string& program, std::vector<profraw::Pair> pairs, const std::string& maps) {
  std::string v3 = make_raw(program, pairs, maps);
  profraw::Header h = header_of(v3);
  h.version = 2;
  h.header_size = profraw::kHeaderSizeV2;
  std::string bytes(reinterpret_cast<const char*>(&h), profraw::kHeaderSizeV2);
  return bytes + v3.substr(profraw::kHeaderSizeV5);
}

TEST(Profraw, Version2StillReads) {
  std::string bytes = make_v2("/usr/bin/prog", {{0x55d0c0a01010, 7}, {0x55d0c0a01020, 1}}, kMaps);
  profraw::Unsampled blocked{1, 1, 2'000'000, {124}};
  bytes.append(reinterpret_cast<const char*>(&blocked), sizeof blocked);
  const uint32_t one = 1;
  std::memcpy(bytes.data() + offsetof(profraw::Header, unsampled_count), &one, 4);
  ProfrawData data = read_profraw(bytes);
  EXPECT_EQ(data.profile.total_count(), 8u);
  EXPECT_EQ(data.unsampled.size(), 1u);
  EXPECT_FALSE(data.stacks_captured);
  EXPECT_FALSE(data.profile.has_stacks());
  for (const Sample& s : data.profile.samples) EXPECT_EQ(s.stack, StackTable::kNoCallers);
  EXPECT_THROW(read_profraw(bytes + "x"), FormatError);
  EXPECT_THROW(read_profraw(std::string_view(bytes).substr(0, bytes.size() - 1)), FormatError);
}

// A v3 dump: pairs, then stack records after the (here absent) unsampled
// records.
struct StackSpec {
  std::vector<uint64_t> pcs;  // leaf first, callers as return addresses
  uint64_t weight;
  bool truncated = false;
  uint32_t flags = 0;  // beyond truncated (version 7: the GIL's state)
};
std::string with_stacks(std::string bytes, const std::vector<StackSpec>& stacks, uint64_t dropped = 0) {
  std::string records;
  for (const StackSpec& spec : stacks) {
    profraw::StackRecord record{static_cast<uint32_t>(spec.pcs.size()),
                                (spec.truncated ? profraw::kStackTruncated : 0u) | spec.flags, spec.weight, 0, 0};
    records.append(reinterpret_cast<const char*>(&record), sizeof record);
    records.append(reinterpret_cast<const char*>(spec.pcs.data()), spec.pcs.size() * sizeof(uint64_t));
  }
  profraw::Header h = header_of(bytes);
  h.stack_count = stacks.size();
  h.stacks_length = records.size();
  h.stacks_dropped = dropped;
  h.stack_flags = profraw::kStacksCaptured;
  h.max_depth = 128;
  put_header(&bytes, h);
  return bytes + records;
}

TEST(Profraw, StacksSpreadOverThePcTable) {
  const uint64_t leaf = 0x55d0c0a01010, other = 0x55d0c0a01100, caller = 0x55d0c0a01200, root = 0x55d0c0a01300;
  // leaf: 10 in the pc table, 6 + 3 in two stacks (1 without one: the
  // stack table was full); other: 2 in the pc table, 5 in a truncated
  // stack (the pc table was full).
  const std::string bytes = with_stacks(make_raw("/usr/bin/prog", {{leaf, 10}, {other, 2}}, kMaps),
                                        {{{leaf, caller, root}, 6},
                                         {{leaf, root}, 3},
                                         {{other, caller}, 5, true},
                                         {{leaf, caller, root}, 0}},
                                        4);
  ProfrawData data = read_profraw(bytes);
  const Profile& p = data.profile;
  EXPECT_TRUE(data.stacks_captured);
  EXPECT_EQ(data.max_depth, 128u);
  EXPECT_EQ(p.stacks_dropped, 4u);
  EXPECT_EQ(p.total_count(), 10u + 5u);
  std::map<std::pair<uint64_t, std::vector<uint64_t>>, std::pair<uint64_t, bool>> seen;
  for (const Sample& s : p.samples) {
    auto callers = p.stacks.callers(s.stack);
    seen[{s.address, {callers.begin(), callers.end()}}] = {s.count, p.stacks.truncated(s.stack)};
  }
  // Callers are call sites: return address - 1.
  using Key = std::pair<uint64_t, std::vector<uint64_t>>;
  using Value = std::pair<uint64_t, bool>;
  EXPECT_EQ(seen[(Key{leaf, {caller - 1, root - 1}})], (Value{6, false}));
  EXPECT_EQ(seen[(Key{leaf, {root - 1}})], (Value{3, false}));
  EXPECT_EQ(seen[(Key{leaf, {}})], (Value{1, true}));
  EXPECT_EQ(seen[(Key{other, {caller - 1}})], (Value{5, true}));
  EXPECT_EQ(seen.size(), 4u);
  EXPECT_TRUE(std::is_sorted(p.samples.begin(), p.samples.end(),
                             [](const Sample& a, const Sample& b) { return a.address < b.address; }));
  // Every truncation is an error.
  for (size_t n = bytes.size() - 40; n < bytes.size(); ++n)
    EXPECT_THROW(read_profraw(std::string_view(bytes).substr(0, n)), FormatError) << n;
}

// Version 4: each stack record's thread and, after the stacks, a record
// naming each thread; an ended thread's has no name.
TEST(Profraw, StacksKeepTheirThreadsAndThreadsTheirNames) {
  const uint64_t leaf = 0x55d0c0a01010, caller = 0x55d0c0a01200;
  std::string bytes = make_raw("/usr/bin/prog", {{leaf, 9}}, kMaps);
  std::string stacks;
  for (auto [tid, weight] : {std::pair{101, 6}, std::pair{102, 3}}) {
    profraw::StackRecord record{2, 0, static_cast<uint64_t>(weight), tid, 0};
    stacks.append(reinterpret_cast<const char*>(&record), sizeof record);
    for (uint64_t pc : {leaf, caller}) stacks.append(reinterpret_cast<const char*>(&pc), sizeof pc);
  }
  std::string threads;
  profraw::ThreadRecord named{101, 0, "burn-a"}, ended{102, profraw::kThreadEnded, ""};
  for (const auto* record : {&named, &ended}) threads.append(reinterpret_cast<const char*>(record), sizeof *record);
  profraw::Header h = header_of(bytes);
  h.stack_count = 2;
  h.stacks_length = stacks.size();
  h.stack_flags = profraw::kStacksCaptured;
  h.thread_count = 2;
  put_header(&bytes, h);
  bytes += stacks + threads;
  const Profile p = read_profraw(bytes).profile;
  std::map<int32_t, uint64_t> by_thread;
  for (const Sample& s : p.samples) by_thread[s.tid] += s.count;
  EXPECT_EQ(by_thread, (std::map<int32_t, uint64_t>{{101, 6}, {102, 3}}));
  EXPECT_EQ(p.thread_names, (std::map<int32_t, std::string>{{101, "burn-a"}, {102, profraw::kEndedThreadName}}));
  // A thread record short, or one too many: truncated, or trailing bytes.
  EXPECT_THROW(read_profraw(std::string_view(bytes).substr(0, bytes.size() - 1)), FormatError);
  EXPECT_THROW(read_profraw(bytes + threads), FormatError);
}

// Version 3 (before threads): a 216-byte header and 16-byte stack records;
// its samples have no thread.
TEST(Profraw, Version3StillReads) {
  const uint64_t leaf = 0x55d0c0a01010, caller = 0x55d0c0a01200;
  std::string v4 = make_raw("/usr/bin/prog", {{leaf, 5}}, kMaps);
  profraw::Header h = header_of(v4);
  h.version = 3;
  h.header_size = profraw::kHeaderSizeV3;
  std::string record(profraw::kStackRecordSizeV3, '\0');
  const uint32_t depth = 2;
  const uint64_t weight = 5;
  std::memcpy(record.data(), &depth, 4);
  std::memcpy(record.data() + 8, &weight, 8);
  for (uint64_t pc : {leaf, caller}) record.append(reinterpret_cast<const char*>(&pc), sizeof pc);
  h.stack_count = 1;
  h.stacks_length = record.size();
  h.stack_flags = profraw::kStacksCaptured;
  const std::string bytes =
      std::string(reinterpret_cast<const char*>(&h), profraw::kHeaderSizeV3) + v4.substr(profraw::kHeaderSizeV5) + record;
  const Profile p = read_profraw(bytes).profile;
  ASSERT_EQ(p.samples.size(), 1u);
  EXPECT_EQ(p.samples[0].count, 5u);
  EXPECT_EQ(p.samples[0].tid, 0);
  EXPECT_EQ(p.stacks.callers(p.samples[0].stack).size(), 1u);
  EXPECT_TRUE(p.thread_names.empty());
  EXPECT_THROW(read_profraw(bytes + "x"), FormatError);
}

// Version 5 (issue 22): each pair's and each stack record's observations
// beside its weighted count; the part of a pc's count beyond its stacks
// keeps the part of its observations beyond theirs. Version 4 files read
// without observations (has_observations false: intervals as before).
TEST(Profraw, Version5KeepsObservationsAndVersion4HasNone) {
  const uint64_t leaf = 0x55d0c0a01010, caller = 0x55d0c0a01200, other = 0x55d0c0a01100;
  std::string bytes = make_raw("/usr/bin/prog", {{leaf, 64, 4}, {other, 3, 3}}, kMaps, 5);
  profraw::StackRecord record{2, 0, 48, 101, 3};  // three of leaf's four signals, 16 periods each
  std::string stacks(reinterpret_cast<const char*>(&record), sizeof record);
  for (uint64_t pc : {leaf, caller}) stacks.append(reinterpret_cast<const char*>(&pc), sizeof pc);
  profraw::Header h = header_of(bytes);
  h.stack_count = 1;
  h.stacks_length = stacks.size();
  h.stack_flags = profraw::kStacksCaptured;
  put_header(&bytes, h);
  bytes += stacks;
  const Profile p = read_profraw(bytes).profile;
  EXPECT_TRUE(p.has_observations);
  EXPECT_EQ(p.total_count(), 67u);
  EXPECT_EQ(p.total_observations(), 7u);
  std::map<std::pair<uint64_t, size_t>, std::pair<uint64_t, uint64_t>> seen;  // (pc, callers) -> (count, observations)
  for (const Sample& s : p.samples) seen[{s.address, p.stacks.callers(s.stack).size()}] = {s.count, s.observations};
  using Key = std::pair<uint64_t, size_t>;
  using Value = std::pair<uint64_t, uint64_t>;
  EXPECT_EQ(seen[(Key{leaf, 1})], (Value{48, 3}));
  EXPECT_EQ(seen[(Key{leaf, 0})], (Value{16, 1}));
  EXPECT_EQ(seen[(Key{other, 0})], (Value{3, 3}));
  // Pairs are 24 bytes: one short is a truncated file.
  EXPECT_THROW(read_profraw(std::string_view(bytes).substr(0, bytes.size() - 1)), FormatError);

  const Profile old = read_profraw(make_raw("/usr/bin/prog", {{leaf, 64, 4}}, kMaps)).profile;
  EXPECT_FALSE(old.has_observations);
  EXPECT_EQ(old.total_count(), 64u);
  EXPECT_EQ(old.total_observations(), 0u);
  EXPECT_EQ(old.samples[0].observations, 0u);
}

TEST(Profraw, BadStackRecordsAreErrors) {
  const std::string base = make_raw("/p", {{5, 1}}, "");
  EXPECT_NO_THROW(read_profraw(with_stacks(base, {{{5, 9}, 1}})));
  EXPECT_THROW(read_profraw(with_stacks(base, {{{}, 1}})), FormatError);  // depth 0
  std::string flags = with_stacks(base, {{{5, 9}, 1}});
  flags[base.size() + 4] = 2;  // the first record's flags
  EXPECT_THROW(read_profraw(flags), FormatError);
  std::string deep = with_stacks(base, {{{5, 9}, 1}});
  const uint32_t depth = 3;  // claims more PCs than the record holds
  std::memcpy(deep.data() + base.size(), &depth, 4);
  EXPECT_THROW(read_profraw(deep), FormatError);
  std::string count = with_stacks(base, {{{5, 9}, 1}});
  const uint64_t huge = UINT64_MAX / 2;
  std::memcpy(count.data() + offsetof(profraw::Header, stack_count), &huge, 8);
  EXPECT_THROW(read_profraw(count), FormatError);
}

// The records after the maps, and the profile rows made of them.
TEST(Profraw, UnsampledRecordsBecomeNamedRowsWithoutMapping) {
  std::string bytes = make_raw("/usr/bin/prog", {{0x55d0c0a01010, 7}}, kMaps);
  profraw::Unsampled blocked{1, 2, 3'850'000'000, {124, 125}};
  profraw::Unsampled unknown{3, 0, 1'500'000, {}};
  bytes.append(reinterpret_cast<const char*>(&blocked), sizeof blocked);
  bytes.append(reinterpret_cast<const char*>(&unknown), sizeof unknown);
  const uint32_t two = 2, cpu = 0;
  std::memcpy(bytes.data() + offsetof(profraw::Header, unsampled_count), &two, 4);
  std::memcpy(bytes.data() + offsetof(profraw::Header, start_clock), &cpu, 4);
  ProfrawData data = read_profraw(bytes);
  ASSERT_EQ(data.unsampled.size(), 2u);
  EXPECT_EQ(data.unsampled[0].threads, 2u);
  EXPECT_EQ(data.unsampled[0].tids[1], 125);
  EXPECT_EQ(data.start_clock, "cpu");
  EXPECT_EQ(data.profile.clock, "perf");
  Profile profile = data.profile;
  add_unsampled_rows(data, &profile);
  // 3.85 s and 1.5 ms in 1 ms periods (rounded); no mapping holds them.
  EXPECT_EQ(profile.total_count(), 7u + 3850u + 2u);
  const uint64_t address = unsampled_address(1);
  EXPECT_EQ(profile.mapping_for(address), nullptr);
  ASSERT_NE(profile.frames_for(address), nullptr);
  EXPECT_EQ(profile.frames_for(address)->front().function, "[unsampled: signals blocked]");
  EXPECT_EQ(profile.frames_for(unsampled_address(3))->front().function, "[unsampled: unknown]");
  // Every truncation, and a bad cause, are errors.
  for (size_t n = bytes.size() - 2 * sizeof(profraw::Unsampled); n < bytes.size(); ++n)
    EXPECT_THROW(read_profraw(std::string_view(bytes).substr(0, n)), FormatError) << n;
  std::string bad = bytes;
  const uint32_t nine = 9;
  std::memcpy(bad.data() + bytes.size() - sizeof(profraw::Unsampled), &nine, 4);
  EXPECT_THROW(read_profraw(bad), FormatError);
}

// Carried, the parts of a period add up over profiles instead of each
// rounding to nothing.
TEST(Profraw, UnsampledTimeIsCarriedOverProfiles) {
  UnsampledCarry carry;
  uint64_t carried = 0, rounded = 0;
  for (int i = 0; i < 10; ++i) {
    ProfrawData data;
    profraw::Unsampled u{};
    u.cause = static_cast<uint32_t>(profraw::UnsampledCause::ended_within_period);
    u.cpu_ns = 400'000;  // 0.4 of a 1 ms period
    data.unsampled.push_back(u);
    Profile with_carry, alone;
    with_carry.period_ns = alone.period_ns = 1'000'000;
    add_unsampled_rows(data, &with_carry, &carry);
    add_unsampled_rows(data, &alone);
    carried += with_carry.total_count();
    rounded += alone.total_count();
    if (with_carry.total_count() != 0) {
      EXPECT_EQ(with_carry.frames_for(unsampled_address(u.cause))->front().function,
                "[unsampled: counted at thread exit, not sampled]");
    }
  }
  EXPECT_EQ(carried, 4u);  // 4 ms in 1 ms periods
  EXPECT_EQ(rounded, 0u);
}

TEST(Profraw, EveryTruncationIsAnError) {
  const std::string bytes = make_raw("/usr/bin/prog", {{0x55d0c0a01010, 7}}, kMaps);
  for (size_t n = 0; n < bytes.size(); ++n)
    EXPECT_THROW(read_profraw(std::string_view(bytes).substr(0, n)), FormatError) << n;
  EXPECT_NO_THROW(read_profraw(bytes));
}

TEST(Profraw, TruncationIsSaidSo) {
  const std::string bytes = make_raw("/p", {{1, 1}, {2, 2}}, "");
  try {
    read_profraw(std::string_view(bytes).substr(0, bytes.size() - 3));
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
}

TEST(Profraw, ForeignAndCorruptBytesAreErrors) {
  EXPECT_THROW(read_profraw("not a profile at all, just text"), FormatError);
  std::string bytes = make_raw("/p", {{1, 1}}, "");
  std::string trailing = bytes + "x";
  EXPECT_THROW(read_profraw(trailing), FormatError);
  std::string version = bytes;
  version[8] = 9;
  EXPECT_THROW(read_profraw(version), FormatError);
  // A sample count so large its byte size would wrap 64 bits.
  std::string huge = bytes;
  const uint64_t count = UINT64_MAX / 8;
  std::memcpy(huge.data() + offsetof(profraw::Header, sample_count), &count, 8);
  EXPECT_THROW(read_profraw(huge), FormatError);
  std::string reason = bytes;
  const uint32_t bad = 99;
  std::memcpy(reason.data() + offsetof(profraw::Header, end_reason), &bad, 4);
  EXPECT_THROW(read_profraw(reason), FormatError);
  // maps text that is not maps
  EXPECT_THROW(read_profraw(make_raw("/p", {}, "hello world\n")), FormatError);
}

TEST(Profraw, HeaderAloneGivesTheRunId) {
  const std::string bytes = make_raw("/p", {{1, 1}}, "");
  profraw::Header h = read_profraw_header(bytes.substr(0, sizeof(profraw::Header)));
  EXPECT_STREQ(h.run_id, "run-1");
  EXPECT_THROW(read_profraw_header(bytes.substr(0, 100)), FormatError);
}

TEST(Profraw, DuplicatePcsAreMerged) {
  ProfrawData data = read_profraw(make_raw("/p", {{5, 1}, {5, 2}, {4, 0}}, ""));
  ASSERT_EQ(data.profile.samples.size(), 1u);
  EXPECT_EQ(data.profile.samples[0], (Sample{5, 3}));
}

TEST(Profraw, MergedCountsSaturate) {
  ProfrawData data = read_profraw(make_raw("/p", {{5, UINT64_MAX - 1}, {5, 7}}, ""));
  ASSERT_EQ(data.profile.samples.size(), 1u);
  EXPECT_EQ(data.profile.samples[0].count, UINT64_MAX);
}

// Found by fuzz/decode_profraw_fuzzer.cc: times so far apart that their
// difference does not fit int64 (undefined behaviour before the fix).
TEST(Profraw, DurationOfTimesFarApart) {
  std::string bytes = make_raw("/p", {}, "");
  const int64_t start = INT64_MIN + 5, end = INT64_MAX - 5;
  std::memcpy(bytes.data() + offsetof(profraw::Header, start_ns), &start, 8);
  std::memcpy(bytes.data() + offsetof(profraw::Header, end_ns), &end, 8);
  EXPECT_EQ(read_profraw(bytes).profile.duration_ns, UINT64_MAX - 10);
}

// The fuzzer's property for `make check`, without clang: noise and mutated
// dumps either read or throw FormatError, and what reads agrees with its
// header.
TEST(Profraw, RandomBytesAndMutationsNeverCrash) {
  std::mt19937_64 random(20261122);
  const std::vector<std::string> seeds = {make_raw("/usr/bin/prog", {{0x55d0c0a01010, 3}, {0x7f0000000100, 1}}, kMaps),
                                          make_raw("/p", {}, ""),
                                          with_stacks(make_raw("/p", {{5, 4}}, ""), {{{5, 9, 13}, 3}, {{5, 9}, 1, true}})};
  int accepted = 0, refused = 0;
  for (int round = 0; round < 20000; ++round) {
    std::string bytes;
    if (round % 4 == 0) {  // noise, sometimes behind a valid magic and version
      bytes.resize(random() % 400);
      for (char& c : bytes) c = static_cast<char>(random());
      if (round % 8 == 0 && bytes.size() >= 12) {
        std::memcpy(bytes.data(), profraw::kMagic, 8);
        std::memcpy(bytes.data() + 8, &profraw::kVersion, 4);
      }
    } else {  // a valid dump with a few bytes changed, inserted or cut
      bytes = seeds[random() % seeds.size()];
      const int edits = 1 + static_cast<int>(random() % 4);
      for (int e = 0; e < edits && !bytes.empty(); ++e) {
        const size_t at = random() % bytes.size();
        switch (random() % 3) {
          case 0: bytes[at] = static_cast<char>(random()); break;
          case 1: bytes.insert(at, 1, static_cast<char>(random())); break;
          case 2: bytes.resize(at); break;
        }
      }
    }
    try {
      const ProfrawData data = read_profraw(bytes);
      const profraw::Header header = read_profraw_header(bytes);
      ASSERT_EQ(data.profile.pid, header.pid);
      ASSERT_EQ(data.maps.size(), header.maps_length);
      ++accepted;
    } catch (const FormatError&) {
      ++refused;
    }
  }
  EXPECT_GT(accepted, 100);  // the mutations reach past the checks
  EXPECT_GT(refused, 100);
}

// The ledger (issue 12): whole records in order; a torn write (a short
// record, which shifts none of the records after it only when it is the
// last), foreign bytes, a bad kind or end reason are skipped.
TEST(Ledger, ReadsWholeRecordsAndSkipsTheRest) {
  auto record = [](uint32_t kind, int64_t pid, uint32_t reason) {
    profraw::LedgerRecord r{};
    std::memcpy(r.magic, profraw::kLedgerMagic, sizeof r.magic);
    r.kind = kind;
    r.pid = pid;
    r.start_ns = pid * 10;
    r.end_reason = reason;
    std::memset(r.name, 'x', sizeof r.name);  // no NUL: the reader ends it
    return std::string(reinterpret_cast<const char*>(&r), sizeof r);
  };
  // Kind 3 (not_entered, issue 20) with a reason of NotEntered; kind 4
  // (unwritten, issue 32) is read, kind 5 is none.
  std::string bytes = record(1, 5, 0) + record(2, 5, 1) + record(5, 6, 1) + record(2, 7, 9) + record(1, 0, 0) +
                      std::string(128, 'z') + record(2, 8, 4) + record(3, 10, 1) + record(3, 11, 9) + record(4, 12, 1);
  bytes += record(1, 9, 0).substr(0, 100);
  const std::vector<profraw::LedgerRecord> records = read_ledger(bytes);
  ASSERT_EQ(records.size(), 5u);
  EXPECT_EQ(records[4].kind, 4u);
  EXPECT_EQ(records[4].pid, 12);
  EXPECT_EQ(records[3].kind, 3u);
  EXPECT_EQ(records[3].pid, 10);
  EXPECT_EQ(records[0].pid, 5);
  EXPECT_EQ(records[0].kind, 1u);
  EXPECT_EQ(records[1].kind, 2u);
  EXPECT_EQ(records[1].start_ns, 50);
  EXPECT_EQ(records[2].pid, 8);
  EXPECT_EQ(records[2].end_reason, 4u);
  EXPECT_EQ(std::strlen(records[2].name), sizeof records[2].name - 1);
  EXPECT_TRUE(read_ledger("").empty());
}

}  // namespace
}  // namespace profiling::format

namespace profiling::format {
namespace {

// Version 6 (issue 31): interpreter frames after the threads, each its
// address, line and strings padded to 8 bytes; a record at a native address
// or short of its strings is an error.
std::string with_interpreter_frames(std::string bytes, uint64_t address, const std::string& function,
                                    const std::string& file, size_t cut = 0) {
  profraw::InterpreterFrameRecord record{address, 7, static_cast<uint32_t>(function.size()),
                                         static_cast<uint32_t>(file.size())};
  std::string records(reinterpret_cast<const char*>(&record), sizeof record);
  records += function + file;
  records.resize((records.size() + 7) / 8 * 8 - cut, '\0');
  profraw::Header h = header_of(bytes);
  h.interp_frame_count = 1;
  h.interp_frames_length = records.size();
  put_header(&bytes, h);
  return bytes + records;
}

TEST(Profraw, Version6NamesItsInterpreterFrames) {
  const std::string base = make_raw("/usr/bin/python3", {{5, 4}}, "", 6);
  const ProfrawData data =
      read_profraw(with_interpreter_frames(base, kInterpreterFrameBase + 3, "Parser.parse", "parse.py"));
  EXPECT_TRUE(data.interpreter_frames);
  const auto& frames = data.profile.frames.at(kInterpreterFrameBase + 3);
  EXPECT_EQ(frames[0].function, "Parser.parse");
  EXPECT_EQ(frames[0].file, "parse.py");
  EXPECT_EQ(frames[0].line, 7);
  EXPECT_FALSE(read_profraw(base).interpreter_frames);
  EXPECT_THROW(read_profraw(with_interpreter_frames(base, 0x401000, "f", "x.py")), FormatError);
  EXPECT_THROW(read_profraw(with_interpreter_frames(base, kInterpreterFrameBase + 1, "parse", "parse.py", 8)),
               FormatError);
}

// Version 7 (issue 31): a stack record's flags carry whether the thread
// held CPython's GIL (read inside at the sample); the same stack held and
// released stays two samples, and a file before version 7, or a state
// that is neither, is an error.
std::string with_gil_stacks(uint32_t version, uint32_t held_flags) {
  const uint64_t leaf = 0x55d0c0a01010, caller = 0x55d0c0a01200;
  return with_stacks(make_raw("/usr/bin/python3", {{leaf, 10, 10}}, kMaps, version),
                     {{{leaf, caller}, 6, false, held_flags},
                      {{leaf, caller}, 3, false, uint32_t{kGilReleased} << profraw::kStackGilShift},
                      {{leaf, caller}, 1, true}});
}

TEST(Profraw, Version7StacksSayWhetherTheGilWasHeld) {
  const uint32_t held = uint32_t{kGilHeld} << profraw::kStackGilShift;
  const Profile p = read_profraw(with_gil_stacks(7, held)).profile;
  std::map<uint8_t, uint64_t> by_gil;
  for (const Sample& s : p.samples) by_gil[s.gil] += s.count;
  EXPECT_EQ(by_gil, (std::map<uint8_t, uint64_t>{{kGilUnknown, 1}, {kGilHeld, 6}, {kGilReleased, 3}}));
  EXPECT_THROW(read_profraw(with_gil_stacks(6, held)), FormatError);  // not a version 6 flag
  EXPECT_THROW(read_profraw(with_gil_stacks(7, 3u << profraw::kStackGilShift)), FormatError);
  EXPECT_THROW(read_profraw(with_gil_stacks(7, 8)), FormatError);
}

}  // namespace
}  // namespace profiling::format
