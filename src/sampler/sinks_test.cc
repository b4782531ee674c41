#include "sampler/sinks.h"

#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "base/safe_access.h"
#include "sampler/bins.h"
#include "sampler/sampler.h"

namespace profiling::sampler {
namespace {

// One region published as the handler sees it, with its fast path prepared
// as control.cc prepares it; unpublished at the end of the scope.
struct Published {
  Region region;
  Segment segment{};
  HistogramTable table;
  explicit Published(const Region& r, BinLimit limit = BinLimit::saturate) : region(r) {
    segment = Segment{r.offset, region_end(r), 0};
    table.segments = &segment;
    table.segment_count = 1;
    table.regions = &region;
    table.region_count = 1;
    table.limit = limit;
    prepare_fast_segment(&table);
    g_histogram.store(&table);
  }
  ~Published() { g_histogram.store(nullptr); }
};

// Every scale kind (powers of two take one shift, the others the split
// multiply), both widths and both arithmetics: deliver() counts each pc in
// the bin bin_index() names, and nothing outside the region.
TEST(Deliver, FastPathCountsWhereBinIndexSays) {
  std::mt19937_64 random(7);
  for (uint32_t scale : {65536u, 32768u, 16384u, 2u, 1u, 65535u, 40000u, 12345u, 3u}) {
    for (BinWidth width : {BinWidth::u16, BinWidth::u32}) {
      for (BinArithmetic arithmetic : {BinArithmetic::printed, BinArithmetic::illumos}) {
        if (width == BinWidth::u32 && arithmetic == BinArithmetic::illumos) continue;  // no such system
        std::vector<uint32_t> storage(257);
        Region r;
        r.bins = storage.data();
        r.nbins = 257;
        r.offset = 0x400003;  // odd: the arithmetics differ
        r.scale = scale;
        r.width = width;
        r.arithmetic = arithmetic;
        std::vector<uint64_t> expected(r.nbins);
        {
          Published published(r);
          EXPECT_EQ(published.table.fast.length, region_end(r) - r.offset);
          EXPECT_EQ(published.table.fast.power_of_two, (scale & (scale - 1)) == 0);
          const uint64_t span = region_end(r) - r.offset;
          for (int i = 0; i < 2000; ++i) {
            // Inside, at both edges, and outside on both sides.
            uint64_t pc = r.offset + random() % span;
            if (i % 10 == 0) pc = r.offset + span - 1 - (i % 3);
            if (i % 10 == 1) pc = r.offset + (i % 3);
            if (i % 10 == 2) pc = r.offset - 1 - (i % 5);
            if (i % 10 == 3) pc = r.offset + span + (i % 5);
            const uint32_t weight = 1 + i % 3;
            deliver(pc, weight);
            const uint64_t bin = bin_index(pc, r);
            if (bin < r.nbins) expected[bin] += weight;
          }
        }
        for (size_t b = 0; b < r.nbins; ++b) {
          const uint64_t got = width == BinWidth::u32 ? storage[b] : reinterpret_cast<uint16_t*>(storage.data())[b];
          ASSERT_EQ(got, expected[b]) << "scale " << scale << " width " << static_cast<int>(width) << " arithmetic "
                                      << static_cast<int>(arithmetic) << " bin " << b;
        }
      }
    }
  }
}

TEST(Deliver, FastPathSaturates) {
  uint16_t bins16[4] = {65530, 0, 0, 0};
  uint32_t bins32[4] = {0xfffffff0u, 0, 0, 0};
  Region r;
  r.bins = bins16;
  r.nbins = 4;
  r.offset = 0x1000;
  r.scale = 65536;
  {
    Published published(r);
    deliver(0x1000, 4);
    EXPECT_EQ(bins16[0], 65534);
    deliver(0x1000, 1000001);
    EXPECT_EQ(bins16[0], 65535);
    deliver(0x1001, 1);
    EXPECT_EQ(bins16[0], 65535);
  }
  r.bins = bins32;
  r.width = BinWidth::u32;
  {
    Published published(r);
    deliver(0x1000, 15);
    EXPECT_EQ(bins32[0], 0xffffffffu);
    deliver(0x1000, 1000001);
    EXPECT_EQ(bins32[0], 0xffffffffu);
  }
}

// Solaris's stop at 32767 and several regions take the general path; the
// fast one is not prepared for them.
TEST(Deliver, NoFastPathForTheSolarisLimit) {
  uint16_t bins[4] = {};
  Region r;
  r.bins = bins;
  r.nbins = 4;
  r.offset = 0x1000;
  r.scale = 65536;
  Published published(r, BinLimit::stop_at_32767);
  EXPECT_EQ(published.table.fast.length, 0u);
  deliver(0x1002, 40000);
  EXPECT_EQ(bins[1], 32767);
  EXPECT_EQ(g_histogram.load(), nullptr) << "the limit stops profiling";
}

// A bin whose memory went away: the fast path's landing pad turns the
// histogram off and counts the sample as dropped; the caller goes on.
TEST(Deliver, FastPathFaultTurnsTheHistogramOff) {
  install_fault_guard();
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* p = mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  for (BinWidth width : {BinWidth::u16, BinWidth::u32}) {
    Region r;
    r.bins = p;
    r.nbins = 16;
    r.offset = 0x1000;
    r.scale = 65536;
    r.width = width;
    Published published(r);
    deliver(0x1002, 1);
    EXPECT_EQ(g_histogram.load(), &published.table);
    ASSERT_EQ(mprotect(p, page, PROT_READ), 0);
    const uint64_t faults = g_stats.buffer_faults.load(), dropped = g_stats.dropped.load();
    deliver(0x1002, 5);
    EXPECT_EQ(g_histogram.load(), nullptr);
    EXPECT_EQ(g_stats.buffer_faults.load(), faults + 1);
    EXPECT_EQ(g_stats.dropped.load(), dropped + 5);
    ASSERT_EQ(mprotect(p, page, PROT_READ | PROT_WRITE), 0);
  }
  munmap(p, page);
}

}  // namespace
}  // namespace profiling::sampler
