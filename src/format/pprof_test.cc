// pprof profile.proto writer and reader: round trips, the message layout the
// pprof tools rely on (checked through the generated protobuf classes), and
// robustness against truncated, corrupt and random input.
#include "format/pprof.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <map>
#include <random>
#include <tuple>
#include <vector>

#include "profile.pb.h"

namespace profiling::format {
namespace {

namespace pb = perftools::profiles;

Profile sample_profile() {
  Profile profile;
  profile.program = "/usr/bin/prog";
  profile.pid = 4242;
  profile.clock = "perf";
  profile.period_ns = 1'000'000;
  profile.duration_ns = 2'500'000'000;
  profile.time_nanos = 1'700'000'000'123'456'789;
  profile.dropped = 3;
  profile.mappings.push_back({0x555555554000, 0x555555556000, 0x1000, "/usr/bin/prog", "0123456789abcdef"});
  profile.mappings.push_back({0x7ffff7dd0000, 0x7ffff7f00000, 0x28000, "/lib/x86_64-linux-gnu/libc.so.6", ""});
  profile.samples = {{0x555555554100, 7}, {0x555555554200, 1}, {0x7ffff7dd1000, 12}, {0x10, 2}};
  return profile;
}

std::string gunzip_for_test(const std::string& compressed) {
  z_stream stream{};
  EXPECT_EQ(inflateInit2(&stream, 15 + 16), Z_OK);
  std::string out(1 << 20, '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  stream.avail_in = static_cast<uInt>(compressed.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(inflate(&stream, Z_FINISH), Z_STREAM_END);
  out.resize(stream.total_out);
  inflateEnd(&stream);
  return out;
}

std::string gzip_for_test(const std::string& raw) {
  z_stream stream{};
  EXPECT_EQ(deflateInit2(&stream, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&stream, raw.size()), '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
  stream.avail_in = static_cast<uInt>(raw.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&stream, Z_FINISH), Z_STREAM_END);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

pb::Profile parse(const std::string& gzipped) {
  pb::Profile message;
  EXPECT_TRUE(message.ParseFromString(gunzip_for_test(gzipped)));
  return message;
}

TEST(Pprof, RoundTripKeepsSamplesMappingsAndTimes) {
  Profile profile = sample_profile();
  std::string bytes = encode_pprof(profile);
  EXPECT_TRUE(looks_like_gzip(bytes));
  Profile back = decode_pprof(bytes);
  Profile expected = profile;
  std::sort(expected.samples.begin(), expected.samples.end(),
            [](const Sample& a, const Sample& b) { return a.address < b.address; });
  EXPECT_EQ(back, expected);
}

// Issue 22: the observations behind each count travel as a third sample
// type, observations/count, which the reader takes back (and only then
// says the profile has observations); the first value stays the count.
TEST(Pprof, ObservationsRoundTripAsTheirOwnSampleType) {
  Profile profile = sample_profile();
  profile.has_observations = true;
  for (Sample& s : profile.samples) s.observations = s.count / 16 + 1;
  const Profile back = decode_pprof(encode_pprof(profile));
  EXPECT_TRUE(back.has_observations);
  Profile expected = profile;
  std::sort(expected.samples.begin(), expected.samples.end(),
            [](const Sample& a, const Sample& b) { return a.address < b.address; });
  EXPECT_EQ(back, expected);
  EXPECT_EQ(back.total_observations(), expected.total_observations());
  // A file without them (older profil, other producers): none.
  const Profile plain = decode_pprof(encode_pprof(sample_profile()));
  EXPECT_FALSE(plain.has_observations);
  EXPECT_EQ(plain.total_observations(), 0u);
}

// Stacks: one location per frame, leaf first; a truncated stack ends in a
// "[truncated]" root; a sample of the same leaf and stack in one process
// is one sample. Read back, the same stacks under the same counts.
TEST(Pprof, StacksRoundTripFrameByFrame) {
  Profile profile = sample_profile();
  const uint64_t leaf = 0x555555554100, caller = 0x555555554200 - 1, root = 0x555555554300 - 1;
  const uint64_t libc = 0x7ffff7dd1000;
  const uint32_t full = profile.stacks.intern(std::vector<uint64_t>{caller, root}, false);
  const uint32_t through_libc = profile.stacks.intern(std::vector<uint64_t>{libc, caller, root}, false);
  const uint32_t cut = profile.stacks.intern(std::vector<uint64_t>{caller}, true);
  const uint32_t cut_at_leaf = profile.stacks.intern({}, true);
  profile.samples = {{leaf, 5, 0, full},        {leaf, 2, 0, through_libc}, {leaf, 3, 0, cut},
                     {libc, 4, 0, cut_at_leaf}, {leaf, 1, 0, full},         {0x555555554200, 6, 7, full}};
  profile.frames[root] = {{"main", "main", "prog.c", 3}};
  const std::string bytes = encode_pprof(profile);

  pb::Profile message = parse(bytes);
  // Locations: leaf, caller, caller's own sample address, root, libc, and
  // the truncation mark; each sample lists them leaf first.
  EXPECT_EQ(message.location_size(), 6);
  std::map<uint64_t, uint64_t> address_of;
  uint64_t mark = 0;
  for (const pb::Location& l : message.location()) {
    address_of[l.id()] = l.address();
    if (l.mapping_id() == 0 && l.line_size() == 1 &&
        message.string_table(static_cast<int>(message.function(static_cast<int>(l.line(0).function_id() - 1)).name())) ==
            "[truncated]")
      mark = l.id();
  }
  ASSERT_NE(mark, 0u);
  std::map<std::vector<uint64_t>, int64_t> stacks;  // addresses leaf first (mark: 0) -> count
  for (const pb::Sample& s : message.sample()) {
    std::vector<uint64_t> frames;
    for (uint64_t id : s.location_id()) frames.push_back(id == mark ? 0 : address_of.at(id));
    stacks[frames] += s.value(0);
  }
  std::map<std::vector<uint64_t>, int64_t> expected_stacks = {
      {{leaf, caller, root}, 6}, {{leaf, libc, caller, root}, 2}, {{leaf, caller, 0}, 3},
      {{libc, 0}, 4},            {{0x555555554200, caller, root}, 6}};
  EXPECT_EQ(stacks, expected_stacks);

  const Profile back = decode_pprof(bytes);
  std::map<std::tuple<uint64_t, int32_t, std::vector<uint64_t>, bool>, uint64_t> read;
  for (const Sample& s : back.samples) {
    const auto callers = back.stacks.callers(s.stack);
    read[{s.address, s.pid, {callers.begin(), callers.end()}, back.stacks.truncated(s.stack)}] += s.count;
  }
  std::map<std::tuple<uint64_t, int32_t, std::vector<uint64_t>, bool>, uint64_t> expected = {
      {{leaf, 0, {caller, root}, false}, 6},
      {{leaf, 0, {libc, caller, root}, false}, 2},
      {{leaf, 0, {caller}, true}, 3},
      {{libc, 0, {}, true}, 4},
      {{0x555555554200, 7, {caller, root}, false}, 6}};
  EXPECT_EQ(read, expected);
  EXPECT_EQ(back.samples.size(), 5u);
  EXPECT_EQ(back.stacks.size(), 4u);
  EXPECT_EQ(back.frames.at(root), profile.frames.at(root));  // a caller's names survive
  // A fixed point from here on.
  EXPECT_EQ(decode_pprof(encode_pprof(back)), back);
}

// Deep distinct stacks cost their frames once each, not a copy per sample.
TEST(Pprof, ManyDeepStacksAreStoredOnce) {
  Profile profile = sample_profile();
  std::vector<uint64_t> chain(127);
  for (uint32_t i = 0; i < 2000; ++i) {
    for (size_t k = 0; k < chain.size(); ++k) chain[k] = 0x555555554400 + (k == 0 ? i % 500 : k) * 4;
    profile.samples.push_back({0x555555554100u + i % 3, 1, 0, profile.stacks.intern(chain, i % 7 == 0)});
  }
  // 500 distinct first callers, each with and without truncation for some.
  const size_t distinct = profile.stacks.size();
  EXPECT_LE(distinct, 1000u);
  EXPECT_EQ(profile.stacks.frame_count(), distinct * 127);
  const Profile back = decode_pprof(encode_pprof(profile));
  EXPECT_EQ(back.total_count(), profile.total_count());
  EXPECT_EQ(back.stacks.size(), distinct);
  EXPECT_EQ(back.stacks.frame_count(), distinct * 127);
}

TEST(Pprof, SameAddressIsOneLocationAndOneSample) {
  Profile profile = sample_profile();
  profile.samples = {{0x555555554100, 7}, {0x555555554100, 5}};
  pb::Profile message = parse(encode_pprof(profile));
  ASSERT_EQ(message.location_size(), 1);
  ASSERT_EQ(message.sample_size(), 1);
  EXPECT_EQ(message.sample(0).value(0), 12);
  EXPECT_EQ(decode_pprof(encode_pprof(profile)).samples, (std::vector<Sample>{{0x555555554100, 12}}));
}

// A profile of several processes (profil run's small.<pid>.pb.gz): one
// location per address, one sample per process there, labelled pid as
// pprof's -tagfocus=pid=N reads it.
TEST(Pprof, SamplesOfSeveralProcessesKeepTheirPidLabel) {
  Profile profile = sample_profile();
  profile.pid = 0;
  profile.samples = {{0x555555554100, 7, 41}, {0x555555554100, 5, 42}, {0x555555554100, 1, 41}};
  pb::Profile message = parse(encode_pprof(profile));
  ASSERT_EQ(message.location_size(), 1);
  ASSERT_EQ(message.sample_size(), 2);
  for (const pb::Sample& sample : message.sample()) {
    ASSERT_EQ(sample.label_size(), 1);
    EXPECT_EQ(message.string_table(static_cast<int>(sample.label(0).key())), "pid");
    EXPECT_EQ(sample.value(0), sample.label(0).num() == 41 ? 8 : 5);
  }
  EXPECT_EQ(decode_pprof(encode_pprof(profile)).samples,
            (std::vector<Sample>{{0x555555554100, 8, 41}, {0x555555554100, 5, 42}}));
  // A profile of one process has no labels.
  profile.samples = {{0x555555554100, 7}};
  EXPECT_EQ(parse(encode_pprof(profile)).sample(0).label_size(), 0);
}

// The timeline (issue 33): each sample's times as "time_ns" labels of the
// summed sample of its leaf, stack and thread, weights only where one is
// not 1; read back in time order, with its own chains.
TEST(Pprof, TimesRoundTripAsLabelsOfTheirSample) {
  Profile profile = sample_profile();
  const uint64_t leaf = 0x555555554100, other = 0x555555554200;
  const std::vector<uint64_t> callers = {0x555555554300, 0x555555554400};
  const uint32_t stack = profile.stacks.intern(callers, false);
  profile.samples = {{leaf, 3, 0, stack, 7}, {other, 4, 0, StackTable::kNoCallers, 8}};
  const uint32_t timeline_stack = profile.timeline.stacks.intern(callers, false);
  const int64_t t0 = 1'700'000'000'000'000'000;
  profile.timeline.samples = {{t0 + 10, leaf, 1, timeline_stack, 7}, {t0 + 20, other, 3, 0, 8},
                              {t0 + 30, leaf, 1, timeline_stack, 7}, {t0 + 40, other, 1, 0, 8},
                              {t0 + 50, leaf, 1, timeline_stack, 7}};
  const pb::Profile message = parse(encode_pprof(profile));
  ASSERT_EQ(message.sample_size(), 2);
  std::map<std::string, std::vector<int64_t>> labels[2];
  for (int i = 0; i < 2; ++i)
    for (const pb::Label& label : message.sample(i).label())
      labels[i][message.string_table(static_cast<int>(label.key()))].push_back(label.num());
  const int of_leaf = message.sample(0).value(0) == 3 ? 0 : 1;
  EXPECT_EQ(labels[of_leaf]["time_ns"], (std::vector<int64_t>{t0 + 10, t0 + 30, t0 + 50}));
  EXPECT_FALSE(labels[of_leaf].contains("time_weight"));  // each one period
  EXPECT_EQ(labels[1 - of_leaf]["time_ns"], (std::vector<int64_t>{t0 + 20, t0 + 40}));
  EXPECT_EQ(labels[1 - of_leaf]["time_weight"], (std::vector<int64_t>{3, 1}));
  const Profile back = decode_pprof(encode_pprof(profile));
  EXPECT_EQ(back.timeline.samples, profile.timeline.samples);
  EXPECT_EQ(back.timeline.stacks, profile.timeline.stacks);
  // A profile without times writes no time label.
  profile.timeline = Timeline();
  const pb::Profile plain = parse(encode_pprof(profile));
  for (const pb::Sample& sample : plain.sample()) EXPECT_EQ(sample.label_size(), 1);  // thread_id
  EXPECT_TRUE(decode_pprof(encode_pprof(profile)).timeline.empty());
}

TEST(Pprof, MessageLayoutFollowsProfileProto) {
  Profile profile = sample_profile();
  pb::Profile message = parse(encode_pprof(profile));
  auto str = [&](int64_t i) { return message.string_table(static_cast<int>(i)); };
  EXPECT_EQ(message.string_table(0), "");
  ASSERT_EQ(message.sample_type_size(), 2);
  EXPECT_EQ(str(message.sample_type(0).type()), "samples");
  EXPECT_EQ(str(message.sample_type(0).unit()), "count");
  EXPECT_EQ(str(message.sample_type(1).type()), "cpu");
  EXPECT_EQ(str(message.sample_type(1).unit()), "nanoseconds");
  EXPECT_EQ(str(message.period_type().type()), "cpu");
  EXPECT_EQ(str(message.period_type().unit()), "nanoseconds");
  EXPECT_EQ(message.period(), 1'000'000);
  EXPECT_EQ(message.duration_nanos(), 2'500'000'000);
  EXPECT_EQ(message.time_nanos(), 1'700'000'000'123'456'789);
  ASSERT_EQ(message.mapping_size(), 2);
  EXPECT_EQ(message.mapping(0).id(), 1u);
  EXPECT_EQ(message.mapping(0).memory_start(), 0x555555554000u);
  EXPECT_EQ(message.mapping(0).memory_limit(), 0x555555556000u);
  EXPECT_EQ(message.mapping(0).file_offset(), 0x1000u);
  EXPECT_EQ(str(message.mapping(0).filename()), "/usr/bin/prog");
  EXPECT_EQ(str(message.mapping(0).build_id()), "0123456789abcdef");
  EXPECT_FALSE(message.mapping(0).has_functions());
  ASSERT_EQ(message.location_size(), 4);
  ASSERT_EQ(message.sample_size(), 4);
  for (const pb::Sample& sample : message.sample()) {
    ASSERT_EQ(sample.location_id_size(), 1);
    ASSERT_EQ(sample.value_size(), 2);
    EXPECT_EQ(sample.value(1), sample.value(0) * 1'000'000);
    const pb::Location& location = message.location(static_cast<int>(sample.location_id(0) - 1));
    EXPECT_EQ(location.id(), sample.location_id(0));
    if (location.address() == 0x7ffff7dd1000) {
      EXPECT_EQ(location.mapping_id(), 2u);
      EXPECT_EQ(sample.value(0), 12);
    }
    if (location.address() == 0x10) {
      EXPECT_EQ(location.mapping_id(), 0u);  // in no mapping
    }
  }
}

TEST(Pprof, SymbolizerFramesBecomeFunctionsAndLinesInnermostFirst) {
  Profile profile = sample_profile();
  int calls = 0;
  PprofSymbolizer symbolize = [&](const Mapping& mapping, uint64_t address) -> std::vector<PprofFrame> {
    ++calls;
    EXPECT_TRUE(mapping.contains(address));
    if (address == 0x555555554100)
      return {{"inlined_helper", "_Z14inlined_helperv", "helper.h", 12}, {"caller", "_Z6callerv", "main.cc", 40}};
    if (address == 0x555555554200) return {{"caller", "_Z6callerv", "main.cc", 41}};
    return {};
  };
  pb::Profile message = parse(encode_pprof(profile, symbolize));
  EXPECT_EQ(calls, 3);  // each sampled address in a mapping, once
  auto str = [&](int64_t i) { return message.string_table(static_cast<int>(i)); };
  ASSERT_EQ(message.function_size(), 2);
  EXPECT_TRUE(message.mapping(0).has_functions());
  EXPECT_TRUE(message.mapping(0).has_filenames());
  EXPECT_TRUE(message.mapping(0).has_line_numbers());
  EXPECT_TRUE(message.mapping(0).has_inline_frames());
  EXPECT_FALSE(message.mapping(1).has_functions());
  for (const pb::Location& location : message.location()) {
    if (location.address() != 0x555555554100) continue;
    ASSERT_EQ(location.line_size(), 2);
    const pb::Function& inner = message.function(static_cast<int>(location.line(0).function_id() - 1));
    EXPECT_EQ(str(inner.name()), "inlined_helper");
    EXPECT_EQ(str(inner.system_name()), "_Z14inlined_helperv");
    EXPECT_EQ(str(inner.filename()), "helper.h");
    EXPECT_EQ(location.line(0).line(), 12);
    const pb::Function& outer = message.function(static_cast<int>(location.line(1).function_id() - 1));
    EXPECT_EQ(str(outer.name()), "caller");
    EXPECT_EQ(location.line(1).line(), 40);
  }
}

TEST(Pprof, FunctionNamesAndLinesSurviveTheRoundTrip) {
  Profile profile = sample_profile();
  PprofSymbolizer symbolize = [](const Mapping&, uint64_t address) -> std::vector<PprofFrame> {
    if (address == 0x555555554100)
      return {{"inlined_helper", "_Z14inlined_helperv", "helper.h", 12}, {"caller", "_Z6callerv", "main.cc", 40}};
    if (address == 0x7ffff7dd1000) return {{"memcpy", "memcpy", "", 0}};
    return {};
  };
  Profile back = decode_pprof(encode_pprof(profile, symbolize));
  std::map<uint64_t, std::vector<Frame>> expected = {
      {0x555555554100,
       {{"inlined_helper", "_Z14inlined_helperv", "helper.h", 12}, {"caller", "_Z6callerv", "main.cc", 40}}},
      {0x7ffff7dd1000, {{"memcpy", "memcpy", "", 0}}}};
  EXPECT_EQ(back.frames, expected);
  // Unnamed addresses carry nothing.
  EXPECT_EQ(back.frames_for(0x555555554200), nullptr);
  ASSERT_NE(back.frames_for(0x7ffff7dd1000), nullptr);

  // Written again without a symbolizer (the objects are gone), the names
  // read the same; and the whole profile is a fixed point.
  Profile again = decode_pprof(encode_pprof(back));
  EXPECT_EQ(again, back);
  // A name from the symbolizer wins over the one the profile carried.
  PprofSymbolizer renamed = [](const Mapping&, uint64_t address) -> std::vector<PprofFrame> {
    if (address == 0x555555554100) return {{"fresh", "fresh", "fresh.c", 7}};
    return {};
  };
  Profile fresh = decode_pprof(encode_pprof(back, renamed));
  EXPECT_EQ(fresh.frames.at(0x555555554100), (std::vector<Frame>{{"fresh", "fresh", "fresh.c", 7}}));
  EXPECT_EQ(fresh.frames.at(0x7ffff7dd1000), expected.at(0x7ffff7dd1000));
}

TEST(Pprof, CarriedNamesOutsideEveryMappingAreWrittenToo) {
  Profile profile = sample_profile();
  profile.frames[0x10] = {{"jit_stub", "jit_stub", "", 0}};
  pb::Profile message = parse(encode_pprof(profile));
  ASSERT_EQ(message.function_size(), 1);
  EXPECT_EQ(message.string_table(static_cast<int>(message.function(0).name())), "jit_stub");
  EXPECT_EQ(decode_pprof(encode_pprof(profile)).frames, profile.frames);
}

TEST(Pprof, ForeignFunctionTablesAreReadLeafFirstAndChecked) {
  // As another producer may write it: a name without a system name, one
  // function for two addresses, a stack whose caller is named too (both
  // are kept: the caller is a frame of the stack), a location named but
  // never sampled (not kept).
  pb::Profile message;
  for (const char* s : {"", "samples", "count", "/bin/x", "leaf", "_Z4rootv", "x.c"}) message.add_string_table(s);
  auto* type = message.add_sample_type();
  type->set_type(1);
  type->set_unit(2);
  auto* mapping = message.add_mapping();
  mapping->set_id(1);
  mapping->set_memory_start(0x1000);
  mapping->set_memory_limit(0x2000);
  mapping->set_filename(3);
  auto* leaf = message.add_function();
  leaf->set_id(5);
  leaf->set_name(4);
  leaf->set_filename(6);
  auto* root = message.add_function();
  root->set_id(6);
  root->set_system_name(5);
  for (uint64_t id : {1, 2, 3}) {
    auto* location = message.add_location();
    location->set_id(id);
    location->set_mapping_id(1);
    location->set_address(0x1000 + id * 0x10);
    auto* line = location->add_line();
    line->set_function_id(id == 2 ? 6 : 5);
    line->set_line(static_cast<int64_t>(id));
  }
  auto* sample = message.add_sample();
  sample->add_location_id(1);
  sample->add_location_id(2);
  sample->add_value(4);
  Profile profile = decode_pprof(message.SerializeAsString());
  std::map<uint64_t, std::vector<Frame>> expected = {{0x1010, {{"leaf", "leaf", "x.c", 1}}},
                                                      {0x1020, {{"_Z4rootv", "_Z4rootv", "", 2}}}};
  EXPECT_EQ(profile.frames, expected);
  ASSERT_EQ(profile.samples.size(), 1u);
  EXPECT_EQ(profile.samples[0].address, 0x1010u);
  ASSERT_EQ(profile.stacks.callers(profile.samples[0].stack).size(), 1u);
  EXPECT_EQ(profile.stacks.callers(profile.samples[0].stack)[0], 0x1020u);
  sample->set_location_id(0, 2);
  EXPECT_EQ(decode_pprof(message.SerializeAsString()).frames.at(0x1020),
            (std::vector<Frame>{{"_Z4rootv", "_Z4rootv", "", 2}}));

  pb::Profile bad = message;
  bad.mutable_location(0)->mutable_line(0)->set_function_id(9);
  EXPECT_THROW(decode_pprof(bad.SerializeAsString()), FormatError);
  bad = message;
  bad.mutable_function(1)->set_id(5);
  EXPECT_THROW(decode_pprof(bad.SerializeAsString()), FormatError);
  bad = message;
  bad.mutable_function(0)->set_name(70);
  EXPECT_THROW(decode_pprof(bad.SerializeAsString()), FormatError);
}

// Producers that know frames only by function and line (Java, Python)
// write locations without addresses: each stays a frame of its own.
TEST(Pprof, LocationsWithoutAddressesKeepTheirOwnNames) {
  pb::Profile message;
  for (const char* s : {"", "samples", "count", "leaf", "middle", "root"}) message.add_string_table(s);
  auto* type = message.add_sample_type();
  type->set_type(1);
  type->set_unit(2);
  for (uint64_t id : {1, 2, 3}) {
    auto* function = message.add_function();
    function->set_id(id);
    function->set_name(static_cast<int64_t>(id + 2));
    auto* location = message.add_location();
    location->set_id(id);
    location->add_line()->set_function_id(id);
  }
  auto* sample = message.add_sample();
  for (uint64_t id : {1, 2, 3}) sample->add_location_id(id);
  sample->add_value(5);
  auto* other = message.add_sample();
  other->add_location_id(3);
  other->add_value(2);
  const Profile profile = decode_pprof(message.SerializeAsString());
  ASSERT_EQ(profile.samples.size(), 2u);
  std::map<std::string, uint64_t> leaves;
  for (const Sample& s : profile.samples) {
    leaves[profile.frames.at(s.address).front().function] += s.count;
    std::vector<std::string> callers;
    for (uint64_t caller : profile.stacks.callers(s.stack)) callers.push_back(profile.frames.at(caller).front().function);
    if (s.count == 5) {
      EXPECT_EQ(callers, (std::vector<std::string>{"middle", "root"}));
    } else {
      EXPECT_TRUE(callers.empty());
    }
  }
  EXPECT_EQ(leaves, (std::map<std::string, uint64_t>{{"leaf", 5}, {"root", 2}}));
  EXPECT_EQ(decode_pprof(encode_pprof(profile)), profile);  // a fixed point
}

TEST(Pprof, PlainBytesAndForeignProducersDecode) {
  // Uncompressed, and as another producer writes it: two sample types where
  // "count" is not first, a two-frame stack (leaf first), no comments.
  pb::Profile message;
  message.add_string_table("");
  message.add_string_table("cpu");
  message.add_string_table("nanoseconds");
  message.add_string_table("samples");
  message.add_string_table("count");
  message.add_string_table("/bin/x");
  auto* t0 = message.add_sample_type();
  t0->set_type(1);
  t0->set_unit(2);
  auto* t1 = message.add_sample_type();
  t1->set_type(3);
  t1->set_unit(4);
  message.mutable_period_type()->set_type(1);
  message.mutable_period_type()->set_unit(2);
  message.set_period(10'000'000);
  auto* mapping = message.add_mapping();
  mapping->set_id(9);
  mapping->set_memory_start(0x1000);
  mapping->set_memory_limit(0x2000);
  mapping->set_filename(5);
  for (uint64_t id : {1, 2}) {
    auto* location = message.add_location();
    location->set_id(id);
    location->set_mapping_id(9);
    location->set_address(0x1000 + id * 0x10);
  }
  auto* sample = message.add_sample();
  sample->add_location_id(1);
  sample->add_location_id(2);
  sample->add_value(30'000'000);
  sample->add_value(3);
  Profile profile = decode_pprof(message.SerializeAsString());
  EXPECT_EQ(profile.program, "/bin/x");
  EXPECT_EQ(profile.period_ns, 10'000'000u);
  ASSERT_EQ(profile.samples.size(), 1u);
  EXPECT_EQ(profile.samples[0].address, 0x1010u);  // the leaf
  EXPECT_EQ(profile.samples[0].count, 3u);
  const auto callers = profile.stacks.callers(profile.samples[0].stack);
  EXPECT_EQ(std::vector<uint64_t>(callers.begin(), callers.end()), std::vector<uint64_t>{0x1020});
  EXPECT_FALSE(profile.stacks.truncated(profile.samples[0].stack));
  ASSERT_EQ(profile.mappings.size(), 1u);
  EXPECT_EQ(profile.mappings[0].path, "/bin/x");

  // Broken references are refused.
  pb::Profile bad = message;
  bad.mutable_mapping(0)->set_filename(99);
  EXPECT_THROW(decode_pprof(bad.SerializeAsString()), FormatError);
  bad = message;
  bad.mutable_sample(0)->set_location_id(0, 77);
  EXPECT_THROW(decode_pprof(bad.SerializeAsString()), FormatError);
  bad = message;
  bad.mutable_location(0)->set_mapping_id(5);
  EXPECT_THROW(decode_pprof(bad.SerializeAsString()), FormatError);
  bad = message;
  bad.mutable_sample(0)->set_value(1, -1);
  EXPECT_THROW(decode_pprof(bad.SerializeAsString()), FormatError);
  bad = message;
  bad.mutable_sample(0)->add_value(1);
  EXPECT_THROW(decode_pprof(bad.SerializeAsString()), FormatError);
  bad = message;
  bad.set_string_table(0, "x");
  EXPECT_THROW(decode_pprof(bad.SerializeAsString()), FormatError);
}

TEST(Pprof, PathsThatAreNotUtf8AreWrittenAsValidStrings) {
  Profile profile;
  profile.mappings.push_back({0x1000, 0x2000, 0, "/tmp/caf\xe9/prog", ""});
  profile.mappings.push_back({0x3000, 0x4000, 0, "/tmp/caf\xc3\xa9/\xe2\x82\xac", ""});
  profile.samples = {{0x1000, 1}};
  Profile back = decode_pprof(encode_pprof(profile));
  ASSERT_EQ(back.mappings.size(), 2u);
  EXPECT_EQ(back.mappings[0].path, "/tmp/caf\xef\xbf\xbd/prog");
  EXPECT_EQ(back.mappings[1].path, profile.mappings[1].path);  // valid UTF-8 untouched
}

TEST(Pprof, CountsTooLargeForInt64AreRefused) {
  Profile profile;
  profile.period_ns = 2;
  profile.samples = {{1, uint64_t{1} << 62}};
  EXPECT_THROW(encode_pprof(profile), FormatError);  // count * period overflows int64
  profile.period_ns = 1;
  EXPECT_NO_THROW(encode_pprof(profile));
}

TEST(Pprof, TruncatedGzipAtEveryOffsetIsAFormatError) {
  std::string bytes = encode_pprof(sample_profile());
  for (size_t n = 0; n < bytes.size(); ++n)
    EXPECT_THROW(decode_pprof(std::string_view(bytes.data(), n)), FormatError) << "prefix of " << n << " bytes";
  EXPECT_THROW(decode_pprof(bytes + "junk"), FormatError);
  // A profile split over two gzip members reads as gunzip reads it.
  std::string plain = gunzip_for_test(bytes);
  size_t half = plain.size() / 2;
  EXPECT_EQ(decode_pprof(gzip_for_test(plain.substr(0, half)) + gzip_for_test(plain.substr(half))),
            decode_pprof(bytes));
}

TEST(Pprof, RandomBytesAndMutationsNeverCrashAndRereadTheSame) {
  std::mt19937_64 random(7);
  Profile named = sample_profile();
  named.frames[0x555555554100] = {{"inlined_helper", "_Z14inlined_helperv", "helper.h", 12},
                                  {"caller", "_Z6callerv", "main.cc", 40}};
  named.frames[0x10] = {{"jit_stub", "", "", 0}};
  // Stacks too: mutations reach location lists and the [truncated] mark.
  named.samples.push_back(
      {0x555555554100, 3, 0, named.stacks.intern(std::vector<uint64_t>{0x555555554200, 0x7ffff7dd1000}, false)});
  named.samples.push_back({0x555555554200, 2, 0, named.stacks.intern(std::vector<uint64_t>{0x10}, true)});
  std::string gzipped = encode_pprof(named);
  std::string plain = gunzip_for_test(gzipped);
  int refused = 0, rewritten = 0;
  for (int round = 0; round < 20000; ++round) {
    std::string bytes;
    if (round % 3 == 0) {
      bytes.resize(random() % 300);
      for (char& c : bytes) c = static_cast<char>(random());
      if (round % 6 == 0 && bytes.size() >= 2) bytes[0] = '\x1f', bytes[1] = '\x8b';
    } else {
      bytes = round % 3 == 1 ? gzipped : plain;
      int edits = 1 + static_cast<int>(random() % 4);
      for (int e = 0; e < edits && !bytes.empty(); ++e) {
        size_t at = random() % bytes.size();
        switch (random() % 3) {
          case 0: bytes[at] = static_cast<char>(random()); break;
          case 1: bytes.insert(at, 1, static_cast<char>(random())); break;
          case 2: bytes.resize(at); break;
        }
      }
    }
    Profile decoded;
    try {
      decoded = decode_pprof(bytes);
    } catch (const FormatError&) {
      ++refused;
      continue;
    }
    // What reads at all reads the same once written again (fuzz/'s check).
    try {
      EXPECT_EQ(decode_pprof(encode_pprof(decoded)), decoded) << "round " << round;
      ++rewritten;
    } catch (const FormatError&) {
      // e.g. count * period beyond int64
    }
  }
  EXPECT_GT(refused, 1000);
  EXPECT_GT(rewritten, 100);
}

}  // namespace
}  // namespace profiling::format
