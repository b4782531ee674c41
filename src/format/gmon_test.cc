// gmon.out reader and writer: byte layouts against <sys/gmon_out.h> /
// <sys/gmon.h> and binutils gprof (gmon_io.c, hist.c, call_graph.c,
// basic_blocks.c), the rules gprof enforces between histogram records, and
// robustness against truncated, corrupt and random input.
#include "format/gmon.h"

#include <gtest/gtest.h>

#include <cstring>
#include <ostream>
#include <random>
#include <set>

namespace profiling::format {

// Readable failure messages.
void PrintTo(const GmonData& data, std::ostream* os) {
  for (const GmonHistogram& h : data.histograms) {
    *os << "hist[" << std::hex << h.low_pc << "," << h.high_pc << std::dec << ") rate " << h.rate_hz << " '"
        << h.dimension << "' '" << h.dimension_abbrev << "' bins";
    for (uint16_t b : h.bins) *os << " " << b;
    *os << "; ";
  }
  for (const GmonArc& a : data.arcs) *os << "arc " << std::hex << a.from_pc << "->" << a.self_pc << std::dec << " x" << a.count << "; ";
  for (const GmonBasicBlock& b : data.basic_blocks) *os << "bb " << std::hex << b.address << std::dec << " x" << b.count << "; ";
}

namespace {

std::string le(uint64_t v, int size) {
  std::string s;
  for (int i = 0; i < size; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  return s;
}

GmonHistogram make_histogram(uint64_t low, uint64_t high, std::vector<uint16_t> bins, uint32_t rate = 100) {
  GmonHistogram h;
  h.low_pc = low;
  h.high_pc = high;
  h.rate_hz = rate;
  h.bins = std::move(bins);
  return h;
}

GmonData sample_data() {
  GmonData data;
  data.histograms.push_back(make_histogram(0x1000, 0x1010, {1, 0, 65535, 7}));
  data.histograms.push_back(make_histogram(0x2000, 0x2008, {3, 4}));
  data.arcs.push_back({0x1004, 0x2000, 12});
  data.arcs.push_back({0x2004, 0x1000, 0xffffffffu});
  data.basic_blocks.push_back({0x1008, 99});
  data.basic_blocks.push_back({0x100c, uint64_t{1} << 40});
  return data;
}

TEST(GmonLayout, GnuHeaderHistogramArcAndBasicBlockBytes) {
  GmonData data;
  data.histograms.push_back(make_histogram(0x401000, 0x401008, {0x0102, 0xa0b0}, 1000));
  data.arcs.push_back({0x401004, 0x401000, 5});
  data.basic_blocks.push_back({0x401002, 9});
  std::string expected;
  expected += std::string("gmon", 4) + le(1, 4) + std::string(12, '\0');  // struct gmon_hdr
  expected += '\0';                                                      // GMON_TAG_TIME_HIST
  expected += le(0x401000, 8) + le(0x401008, 8) + le(2, 4) + le(1000, 4);
  expected += std::string("seconds") + std::string(8, '\0') + "s";  // dimen[15], abbrev
  expected += le(0x0102, 2) + le(0xa0b0, 2);
  expected += '\1' + le(0x401004, 8) + le(0x401000, 8) + le(5, 4);  // GMON_TAG_CG_ARC
  expected += '\2' + le(1, 4) + le(0x401002, 8) + le(9, 8);         // GMON_TAG_BB_COUNT
  EXPECT_EQ(encode_gmon(data), expected);
  EXPECT_EQ(expected.size(), 20u + 1 + 40 + 4 + 1 + 20 + 1 + 4 + 16);
}

TEST(GmonLayout, BsdGmonhdrBinsAndRawArcBytes) {
  GmonData data;
  data.histograms.push_back(make_histogram(0x401000, 0x401008, {0x0102, 0xa0b0}, 250));
  data.arcs.push_back({0x401004, 0x401000, 5});
  std::string expected;
  // struct gmonhdr on LP64: lpc, hpc, ncnt (header + bins), version, profrate, spare[3].
  expected += le(0x401000, 8) + le(0x401008, 8) + le(40 + 4, 4) + le(0x00051879, 4) + le(250, 4);
  expected += std::string(12, '\0');
  expected += le(0x0102, 2) + le(0xa0b0, 2);
  expected += le(0x401004, 8) + le(0x401000, 8) + le(5, 8);  // struct rawarc, long count
  EXPECT_EQ(encode_gmon(data, GmonFlavor::bsd), expected);
}

TEST(GmonLayout, DimensionIsNulPaddedAndMayFillAllFifteenBytes) {
  GmonData data;
  data.histograms.push_back(make_histogram(0, 4, {1}));
  data.histograms[0].dimension = "abcdefghijklmno";
  data.histograms[0].dimension_abbrev = 'z';
  std::string bytes = encode_gmon(data);
  EXPECT_EQ(bytes.substr(20 + 1 + 24, 16), "abcdefghijklmnoz");
  EXPECT_EQ(decode_gmon(bytes), data);
  data.histograms[0].dimension = "abcdefghijklmnop";
  EXPECT_THROW(encode_gmon(data), FormatError);
}

TEST(GmonRoundTrip, GnuKeepsEveryRecord) {
  GmonData data = sample_data();
  GmonFlavor flavor = GmonFlavor::bsd;
  EXPECT_EQ(decode_gmon(encode_gmon(data), &flavor), data);
  EXPECT_EQ(flavor, GmonFlavor::gnu);
}

TEST(GmonRoundTrip, BsdKeepsHistogramAndArcs) {
  GmonData data;
  data.histograms.push_back(make_histogram(0x400000, 0x400100, std::vector<uint16_t>(64, 3), 997));
  data.histograms[0].bins[5] = 65535;
  data.arcs.push_back({1, 2, uint64_t{1} << 40});  // fits the BSD long count
  data.arcs.push_back({3, 4, 0});
  GmonFlavor flavor = GmonFlavor::gnu;
  EXPECT_EQ(decode_gmon(encode_gmon(data, GmonFlavor::bsd), &flavor), data);
  EXPECT_EQ(flavor, GmonFlavor::bsd);
}

TEST(GmonRoundTrip, EmptyDataInBothFlavours) {
  GmonData empty;
  EXPECT_EQ(encode_gmon(empty).size(), 20u);
  EXPECT_EQ(decode_gmon(encode_gmon(empty)), empty);
  EXPECT_EQ(encode_gmon(empty, GmonFlavor::bsd).size(), 40u);
  EXPECT_EQ(decode_gmon(encode_gmon(empty, GmonFlavor::bsd)), empty);
}

TEST(GmonRoundTrip, GnuArcCountsSaturateBsdOnesAreSixtyFourBits) {
  GmonData data;
  data.arcs.push_back({1, 2, uint64_t{1} << 33});
  EXPECT_EQ(decode_gmon(encode_gmon(data)).arcs.at(0).count, 0xffffffffu);
  data.arcs[0].count = UINT64_MAX;
  EXPECT_EQ(decode_gmon(encode_gmon(data, GmonFlavor::bsd)).arcs.at(0).count, UINT64_MAX);
}

TEST(GmonRules, OverlappingHistogramsAreRefused) {
  GmonData data;
  data.histograms.push_back(make_histogram(0x1000, 0x1010, {1, 2, 3, 4}));
  data.histograms.push_back(make_histogram(0x100c, 0x101c, {1, 2, 3, 4}));
  EXPECT_THROW(encode_gmon(data), FormatError);
  // Contained in an earlier one, and earlier one contained in the new one.
  data.histograms[1] = make_histogram(0x1004, 0x1008, {1});
  EXPECT_THROW(encode_gmon(data), FormatError);
  data.histograms[1] = make_histogram(0x0ff0, 0x1020, std::vector<uint16_t>(12));
  EXPECT_THROW(encode_gmon(data), FormatError);
  // Adjacent is fine.
  data.histograms[1] = make_histogram(0x1010, 0x1020, {1, 2, 3, 4});
  EXPECT_NO_THROW(encode_gmon(data));
  std::string out, error;
  data.histograms[1] = make_histogram(0x100c, 0x101c, {1, 2, 3, 4});
  EXPECT_FALSE(try_encode_gmon(data, GmonFlavor::gnu, &out, &error));
  EXPECT_NE(error.find("overlapping"), std::string::npos) << error;
}

// Splices the histogram records of two files into one, as a foreign writer
// could, to check that the reader applies gprof's rules too.
std::string two_histogram_file(const GmonHistogram& a, const GmonHistogram& b) {
  GmonData one, two;
  one.histograms.push_back(a);
  two.histograms.push_back(b);
  return encode_gmon(one) + encode_gmon(two).substr(20);
}

TEST(GmonRules, ReaderRefusesWhatGprofRefuses) {
  GmonHistogram base = make_histogram(0x1000, 0x1010, {1, 2, 3, 4});
  EXPECT_THROW(decode_gmon(two_histogram_file(base, make_histogram(0x1008, 0x1018, {1, 2, 3, 4}))),
               FormatError);
  GmonHistogram other_scale = make_histogram(0x2000, 0x2010, {1, 2});
  EXPECT_THROW(decode_gmon(two_histogram_file(base, other_scale)), FormatError);
  GmonHistogram other_dimension = make_histogram(0x2000, 0x2010, {1, 2, 3, 4});
  other_dimension.dimension = "cycles";
  EXPECT_THROW(decode_gmon(two_histogram_file(base, other_dimension)), FormatError);
  GmonHistogram other_abbrev = make_histogram(0x2000, 0x2010, {1, 2, 3, 4});
  other_abbrev.dimension_abbrev = 'c';
  EXPECT_THROW(decode_gmon(two_histogram_file(base, other_abbrev)), FormatError);
  // gprof keeps the first record's rate and does not check the others.
  GmonHistogram other_rate = make_histogram(0x2000, 0x2010, {1, 2, 3, 4}, 50);
  EXPECT_EQ(decode_gmon(two_histogram_file(base, other_rate)).histograms.size(), 2u);
}

TEST(GmonRules, WriterRefusesDegenerateHistograms) {
  GmonData data;
  data.histograms.push_back(make_histogram(0x1000, 0x1000, {1}));
  EXPECT_THROW(encode_gmon(data), FormatError);  // empty range
  data.histograms[0] = make_histogram(0x1000, 0x1010, {});
  EXPECT_THROW(encode_gmon(data), FormatError);  // no bins
  data.histograms[0] = make_histogram(0x1000, 0x1010, {1}, 0);
  EXPECT_THROW(encode_gmon(data), FormatError);  // rate 0
  data.histograms[0] = make_histogram(0x1000, 0x1010, {1});
  data.histograms.push_back(make_histogram(0x2000, 0x2010, {1}, 200));
  EXPECT_THROW(encode_gmon(data), FormatError);  // rates disagree
}

TEST(GmonRules, IdenticalRangesAreSummedLikeGprof) {
  GmonHistogram a = make_histogram(0x1000, 0x1008, {1, 2});
  GmonHistogram b = make_histogram(0x1000, 0x1008, {10, 0});
  GmonData data = decode_gmon(two_histogram_file(a, b));
  ASSERT_EQ(data.histograms.size(), 2u);
  Profile profile = profile_from_gmon(data, "/bin/prog");
  ASSERT_EQ(profile.samples.size(), 2u);
  EXPECT_EQ(profile.samples[0], (Sample{0x1000, 11}));
  EXPECT_EQ(profile.samples[1], (Sample{0x1004, 2}));
}

TEST(GmonRules, BsdHoldsOneHistogramInSecondsAndNoBasicBlocks) {
  GmonData data = sample_data();
  EXPECT_THROW(encode_gmon(data, GmonFlavor::bsd), FormatError);
  data.histograms.pop_back();
  EXPECT_THROW(encode_gmon(data, GmonFlavor::bsd), FormatError);  // basic blocks
  data.basic_blocks.clear();
  EXPECT_NO_THROW(encode_gmon(data, GmonFlavor::bsd));
  data.histograms[0].dimension = "cycles";
  EXPECT_THROW(encode_gmon(data, GmonFlavor::bsd), FormatError);
}

TEST(GmonDecode, ForeignAndCorruptInputIsAFormatError) {
  EXPECT_THROW(decode_gmon(""), FormatError);
  EXPECT_THROW(decode_gmon("gmo"), FormatError);
  EXPECT_THROW(decode_gmon("\x7f" "ELF\2\1\1\0\0\0\0\0\0\0\0\0\3\0>\0\1\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0"),
               FormatError);
  EXPECT_THROW(decode_gmon(std::string(100, 'x')), FormatError);
  std::string bytes = encode_gmon(sample_data());
  std::string bad_version = bytes;
  bad_version[4] = 2;
  EXPECT_THROW(decode_gmon(bad_version), FormatError);
  std::string shobj = bytes;
  std::memcpy(shobj.data() + 4, le(0x1ffff, 4).data(), 4);  // GMON_SHOBJ_VERSION
  EXPECT_THROW(decode_gmon(shobj), FormatError);
  std::string bad_tag = bytes + '\3';
  try {
    decode_gmon(bad_tag);
    FAIL() << "tag 3 accepted";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("tag 3"), std::string::npos) << e.what();
  }
}

TEST(GmonDecode, HugeLengthFieldsDoNotAllocate) {
  // 2^32-1 bins declared, none present: refused before any allocation.
  std::string gnu = std::string("gmon", 4) + le(1, 4) + std::string(12, '\0') + '\0' + le(0, 8) +
                    le(0x100000000, 8) + le(0xffffffff, 4) + le(100, 4) + std::string(16, '\0');
  EXPECT_THROW(decode_gmon(gnu), FormatError);
  std::string blocks = std::string("gmon", 4) + le(1, 4) + std::string(12, '\0') + '\2' + le(0xffffffff, 4);
  EXPECT_THROW(decode_gmon(blocks), FormatError);
  std::string bsd = le(0, 8) + le(0x100000000, 8) + le(0x7fffffff, 4) + le(0x00051879, 4) + le(100, 4) +
                    std::string(12, '\0');
  EXPECT_THROW(decode_gmon(bsd), FormatError);
}

TEST(GmonDecode, BsdHeaderConsistencyIsChecked) {
  GmonData data;
  data.histograms.push_back(make_histogram(0x1000, 0x1008, {1, 2}));
  std::string bytes = encode_gmon(data, GmonFlavor::bsd);
  std::string odd = bytes;
  std::memcpy(odd.data() + 16, le(43, 4).data(), 4);  // half a bin
  EXPECT_THROW(decode_gmon(odd), FormatError);
  std::string small = bytes;
  std::memcpy(small.data() + 16, le(39, 4).data(), 4);  // smaller than the header
  EXPECT_THROW(decode_gmon(small), FormatError);
  std::string inverted = bytes;
  std::memcpy(inverted.data(), le(0x2000, 8).data(), 8);  // low above high
  EXPECT_THROW(decode_gmon(inverted), FormatError);
  EXPECT_THROW(decode_gmon(bytes + "partial arc"), FormatError);
}

// Every prefix of a valid file either is itself a valid file (it ends
// exactly between records) or is refused; never a crash or another exception.
void check_every_prefix(const std::string& bytes, const std::set<size_t>& record_ends) {
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::string_view prefix(bytes.data(), n);
    if (record_ends.count(n)) {
      EXPECT_NO_THROW(decode_gmon(prefix)) << "prefix of " << n << " bytes";
    } else {
      EXPECT_THROW(decode_gmon(prefix), FormatError) << "prefix of " << n << " bytes";
    }
  }
}

TEST(GmonDecode, TruncationAtEveryByteOffsetGnu) {
  GmonData data = sample_data();
  std::string bytes = encode_gmon(data);
  // header, histogram records (41 + 2 * bins), arcs (21), one block record.
  std::set<size_t> ends = {20};
  size_t at = 20;
  for (const GmonHistogram& h : data.histograms) ends.insert(at += 41 + 2 * h.bins.size());
  for (size_t i = 0; i < data.arcs.size(); ++i) ends.insert(at += 21);
  ends.insert(at += 5 + 16 * data.basic_blocks.size());
  ASSERT_EQ(at, bytes.size());
  check_every_prefix(bytes, ends);
}

TEST(GmonDecode, TruncationAtEveryByteOffsetBsd) {
  GmonData data;
  data.histograms.push_back(make_histogram(0x400000, 0x400010, {1, 2, 3, 4, 5, 6, 7, 8}));
  data.arcs.push_back({1, 2, 3});
  data.arcs.push_back({4, 5, 6});
  std::string bytes = encode_gmon(data, GmonFlavor::bsd);
  check_every_prefix(bytes, {40 + 16, 40 + 16 + 24});
}

TEST(GmonDecode, RandomBytesAndMutationsNeverCrash) {
  std::mt19937_64 random(20240601);
  std::vector<std::string> seeds = {encode_gmon(sample_data()), encode_gmon(GmonData{}, GmonFlavor::bsd)};
  {
    GmonData bsd;
    bsd.histograms.push_back(make_histogram(0x1000, 0x1020, std::vector<uint16_t>(8, 9)));
    bsd.arcs.push_back({1, 2, 3});
    seeds.push_back(encode_gmon(bsd, GmonFlavor::bsd));
  }
  int accepted = 0, refused = 0;
  for (int round = 0; round < 20000; ++round) {
    std::string bytes;
    switch (round % 4) {
      case 0: {  // pure noise, sometimes behind a valid GNU header
        bytes.resize(random() % 200);
        for (char& c : bytes) c = static_cast<char>(random());
        if (round % 8 == 0) bytes = std::string("gmon", 4) + le(1, 4) + std::string(12, '\0') + bytes;
        break;
      }
      default: {  // a valid file with a few bytes changed, inserted or cut
        bytes = seeds[random() % seeds.size()];
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
    }
    try {
      GmonFlavor flavor;
      GmonData data = decode_gmon(bytes, &flavor);
      ++accepted;
      // Whatever was accepted, the writer reproduces in the same flavour,
      // unless it holds what a writer must not produce (rate 0, mixed rates).
      std::string error, out;
      if (try_encode_gmon(data, flavor, &out, &error)) {
        EXPECT_EQ(decode_gmon(out), data);
      }
    } catch (const FormatError&) {
      ++refused;
    }
  }
  EXPECT_GT(refused, 1000);
  EXPECT_GT(accepted, 100);
}

TEST(HistogramFromSamples, SubtractsBiasRoundsToBinsAndSaturates) {
  Profile profile;
  const uint64_t bias = 0x555555554000;
  profile.samples = {
      {bias + 0x1131, 3},      // in bin (0x1130 - 0x1128) / 4 = 2
      {bias + 0x1133, 2},      // same bin
      {bias + 0x1128, 70000},  // bin 0, saturates
      {bias + 0x1127, 5},      // below the rounded range
      {bias + 0x1140, 5},      // at the rounded end: outside
      {0x10, 8},               // below the bias: no wrap-around
  };
  GmonHistogram h = histogram_from_samples(profile, bias, 0x1129, 0x113d, 1000);
  EXPECT_EQ(h.low_pc, 0x1128u);
  EXPECT_EQ(h.high_pc, 0x1140u);
  EXPECT_EQ(h.rate_hz, 1000u);
  EXPECT_EQ(h.dimension, "seconds");
  EXPECT_EQ(h.dimension_abbrev, 's');
  ASSERT_EQ(h.bins.size(), 6u);
  EXPECT_EQ(h.bins, (std::vector<uint16_t>{65535, 0, 5, 0, 0, 0}));
  GmonHistogram wide = histogram_from_samples(profile, bias, 0x1128, 0x1140, 1000, 8);
  EXPECT_EQ(wide.bins, (std::vector<uint16_t>{65535, 5, 0}));
  EXPECT_THROW(histogram_from_samples(profile, bias, 0x1128, 0x1140, 1000, 3), FormatError);
  EXPECT_THROW(histogram_from_samples(profile, bias, 0x1140, 0x1140, 1000), FormatError);
  EXPECT_THROW(histogram_from_samples(profile, 0, 0, uint64_t{1} << 40, 1000), FormatError);
}

TEST(ProfileFromGmon, OneSamplePerNonZeroBinAtItsLowAddress) {
  GmonData data;
  data.histograms.push_back(make_histogram(0x1000, 0x1010, {0, 4, 0, 1}, 250));
  data.histograms.push_back(make_histogram(0x3000, 0x3010, {2, 0, 0, 0}, 250));
  Profile profile = profile_from_gmon(data, "/usr/bin/prog");
  EXPECT_EQ(profile.program, "/usr/bin/prog");
  EXPECT_EQ(profile.period_ns, 4'000'000u);
  ASSERT_EQ(profile.mappings.size(), 1u);
  EXPECT_EQ(profile.mappings[0].path, "/usr/bin/prog");
  EXPECT_EQ(profile.mappings[0].start, 0x1000u);
  EXPECT_EQ(profile.mappings[0].limit, 0x3010u);
  EXPECT_EQ(profile.samples, (std::vector<Sample>{{0x1004, 4}, {0x100c, 1}, {0x3000, 2}}));
  EXPECT_EQ(profile.total_count(), 7u);
}

TEST(ProfileFromGmon, SamplesBackToTheSameHistogram) {
  Profile profile;
  profile.samples = {{0x401130, 10}, {0x401200, 20}, {0x4012fc, 1}};
  GmonHistogram h = histogram_from_samples(profile, 0, 0x401000, 0x401300, 100);
  GmonData data;
  data.histograms.push_back(h);
  Profile back = profile_from_gmon(decode_gmon(encode_gmon(data)), "a.out");
  EXPECT_EQ(back.samples, profile.samples);
  EXPECT_EQ(back.period_ns, 10'000'000u);
}

}  // namespace
}  // namespace profiling::format
