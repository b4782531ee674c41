// The ring reader on synthetic buffers: records in place, across the wrap,
// larger than the scratch, and a broken header.
#include "perf/ring.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "perf/test_ring.h"

namespace profiling::perf {
namespace {

struct Seen {
  uint32_t type;
  std::vector<uint8_t> bytes;
};

std::vector<Seen> walk(const SyntheticRing& ring, uint64_t* tail, size_t scratch_size, WalkResult* result) {
  std::vector<Seen> seen;
  std::vector<uint8_t> scratch(scratch_size);
  *result = walk_records(ring.data(), ring.size(), ring.head(), tail, scratch_size ? scratch.data() : nullptr,
                         scratch_size, [&](const Record& r) {
                           seen.push_back({r.header.type, std::vector<uint8_t>(r.bytes, r.bytes + r.size)});
                         });
  return seen;
}

// 96 bytes of a 128-byte ring written, read and handed back: the next
// record of more than 32 bytes wraps.
uint64_t read_first_96_bytes(SyntheticRing& ring) {
  ring.push(PERF_RECORD_SAMPLE, payload(88, 1));
  uint64_t tail = 0;
  WalkResult result;
  walk(ring, &tail, 0, &result);
  EXPECT_EQ(tail, 96u);
  return tail;
}

TEST(WalkRecords, VisitsEveryRecordInOrderWithoutWrap) {
  SyntheticRing ring(256);
  const auto a = ring.push(PERF_RECORD_SAMPLE, payload(24, 1));
  const auto b = ring.push(PERF_RECORD_LOST, payload(16, 2));
  uint64_t tail = 0;
  WalkResult result;
  const auto seen = walk(ring, &tail, 0, &result);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].bytes, a);
  EXPECT_EQ(seen[1].bytes, b);
  EXPECT_EQ(seen[1].type, static_cast<uint32_t>(PERF_RECORD_LOST));
  EXPECT_EQ(tail, ring.head());
  EXPECT_EQ(result.records, 2u);
  EXPECT_FALSE(result.broken);
}

TEST(WalkRecords, RecordStraddlingTheWrapIsMadeWhole) {
  SyntheticRing ring(128);
  uint64_t tail = read_first_96_bytes(ring);
  WalkResult result;
  const auto wrapped = ring.push(PERF_RECORD_SAMPLE, payload(56, 7));
  const auto after = ring.push(PERF_RECORD_LOST, payload(8, 9));
  const auto seen = walk(ring, &tail, 64, &result);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].bytes, wrapped);  // byte for byte, as written
  EXPECT_EQ(seen[1].bytes, after);
  EXPECT_EQ(result.too_large, 0u);
  EXPECT_EQ(tail, ring.head());
}

TEST(WalkRecords, WrappingRecordLargerThanScratchIsSkippedAndCounted) {
  SyntheticRing ring(128);
  uint64_t tail = read_first_96_bytes(ring);
  WalkResult result;
  ring.push(PERF_RECORD_SAMPLE, payload(56, 7));  // wraps, 64 bytes
  const auto after = ring.push(PERF_RECORD_LOST, payload(8, 9));
  const auto seen = walk(ring, &tail, 32, &result);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].bytes, after);  // the walk went on past it
  EXPECT_EQ(result.too_large, 1u);
  EXPECT_EQ(tail, ring.head());
}

TEST(WalkRecords, ManyLapsKeepEveryRecordWhole) {
  SyntheticRing ring(256);
  uint64_t tail = 0;
  for (int lap = 0; lap < 100; ++lap) {
    std::vector<std::vector<uint8_t>> written;
    for (int n = 0; n < 3; ++n)
      written.push_back(ring.push(PERF_RECORD_SAMPLE, payload(8 * ((lap + n) % 7 + 1), static_cast<uint8_t>(lap + n))));
    WalkResult result;
    const auto seen = walk(ring, &tail, 256, &result);
    ASSERT_EQ(seen.size(), written.size()) << "lap " << lap;
    for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i].bytes, written[i]) << "lap " << lap << " record " << i;
  }
}

TEST(WalkRecords, BrokenHeaderStopsTheWalkAtHead) {
  SyntheticRing ring(128);
  ring.push(PERF_RECORD_SAMPLE, payload(8, 1));
  ring.push_raw_header(PERF_RECORD_SAMPLE, 0);  // size 0: no kernel writes it
  uint64_t tail = 0;
  WalkResult result;
  const auto seen = walk(ring, &tail, 0, &result);
  EXPECT_EQ(seen.size(), 1u);
  EXPECT_TRUE(result.broken);
  EXPECT_EQ(tail, ring.head());  // never spins
}

TEST(WalkRecords, RecordLongerThanWhatWasPublishedIsBroken) {
  SyntheticRing ring(128);
  ring.push_raw_header(PERF_RECORD_SAMPLE, 64);  // head moves 8 bytes only
  uint64_t tail = 0;
  WalkResult result;
  const auto seen = walk(ring, &tail, 0, &result);
  EXPECT_TRUE(seen.empty());
  EXPECT_TRUE(result.broken);
}

}  // namespace
}  // namespace profiling::perf
