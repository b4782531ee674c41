// The ring engine's own logic, apart from the kernel: the events it opens
// (as values), the records they write parsed in its format, a sample's
// weight (remainder carried) and the accounting of lost records, on
// synthetic rings laid out as the kernel writes them.
#include <gtest/gtest.h>
#include <linux/perf_event.h>

#include <cstring>
#include <vector>

#include "perf/records.h"
#include "perf/ring.h"
#include "perf/test_ring.h"
#include "sampler/internal/perf_ring_state.h"

namespace profiling::sampler::ring {
namespace {

using perf::Body;
using perf::SyntheticRing;

// The attributes the engine opened its events with before the perf layer
// (perf_ring.cc until issue 21): task-clock of user time, IP and TID (and
// the counter's value), with stacks the registers bp, sp and ip and the top
// of the stack; LOST records naming their thread; inherited by threads
// only, gone at exec; no reader ever woken.
TEST(RingEvents, SameAttributesAsBeforeThePerfLayer) {
  for (const bool read : {true, false}) {
    for (const uint32_t stack : {0u, 2048u, 16384u}) {
      SCOPED_TRACE(testing::Message() << "read " << read << " stack " << stack);
      const perf_event_attr a = sampling_spec(2'000'000, read, stack).attr();
      EXPECT_EQ(a.size, sizeof a);
      EXPECT_EQ(a.type, static_cast<uint32_t>(PERF_TYPE_SOFTWARE));
      EXPECT_EQ(a.config, static_cast<uint64_t>(PERF_COUNT_SW_TASK_CLOCK));
      EXPECT_EQ(a.sample_period, 2'000'000u);
      const uint64_t stack_fields = stack != 0 ? PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER : 0;
      EXPECT_EQ(a.sample_type, PERF_SAMPLE_IP | PERF_SAMPLE_TID | (read ? PERF_SAMPLE_READ : 0) | stack_fields);
      EXPECT_EQ(a.sample_regs_user, stack != 0 ? (1u << 6) | (1u << 7) | (1u << 8) : 0u);
      EXPECT_EQ(a.sample_stack_user, stack);
      EXPECT_EQ(a.read_format, 0u);
      EXPECT_EQ(a.wakeup_watermark, 0xffffffffu);
      // The flags set, and none other.
      perf_event_attr flags{};
      flags.sample_id_all = flags.exclude_kernel = flags.exclude_hv = 1;
      flags.inherit = flags.inherit_thread = flags.remove_on_exec = flags.watermark = 1;
      perf_event_attr only_flags = a;
      only_flags.size = only_flags.type = 0;
      only_flags.config = only_flags.sample_period = only_flags.sample_type = only_flags.sample_regs_user = 0;
      only_flags.sample_stack_user = only_flags.wakeup_watermark = 0;
      EXPECT_EQ(std::memcmp(&only_flags, &flags, sizeof flags), 0);
    }
  }
}

constexpr uint32_t kPid = 100, kTid = 101;

// A sample as the kernel writes it for sampling_spec(.., read, stack_bytes):
// ip, pid/tid, the counter's value; with a stack, the registers (bp, sp,
// ip), the copy's size, the copy and what of it the kernel filled.
std::vector<uint8_t> sample_body(uint64_t ip, uint32_t tid, uint64_t value, bool read, uint32_t stack_bytes,
                                 uint64_t copied = 0) {
  Body b;
  b.u64(ip).u32(kPid).u32(tid);
  if (read) b.u64(value);
  if (stack_bytes != 0) {
    b.u64(PERF_SAMPLE_REGS_ABI_64).u64(0x7ffd0010).u64(0x7ffd0000).u64(ip);
    const std::vector<uint8_t> stack = perf::payload(stack_bytes, 5);
    b.u64(stack_bytes).bytes(stack.data(), stack.size()).u64(copied);
  }
  return b.get();
}

// PERF_RECORD_LOST with sample_id_all (the events' sample_id: TID).
std::vector<uint8_t> lost_body(uint64_t lost, uint32_t tid) { return Body().u64(7).u64(lost).u32(kPid).u32(tid).get(); }

TEST(RingRecords, SizesAreTheEnginesConstants) {
  SyntheticRing ring(4096);
  EXPECT_EQ(ring.push(PERF_RECORD_SAMPLE, sample_body(1, kTid, 1, true, 0)).size(), kSampleBytes);
  EXPECT_EQ(ring.push(PERF_RECORD_SAMPLE, sample_body(1, kTid, 1, false, 0)).size(), kSampleBytesWithoutRead);
  EXPECT_EQ(ring.push(PERF_RECORD_LOST, lost_body(3, kTid)).size(), kLostBytes);
  // max_sample_bytes' sum for a stack copy of 1 KiB.
  EXPECT_EQ(ring.push(PERF_RECORD_SAMPLE, sample_body(1, kTid, 1, true, 1024)).size(),
            kSampleBytes + 8 + 3 * 8 + 8 + 1024 + 8);
}

// Every record of the ring, walked with the drain's scratch and parsed in
// the format of the events sampling_spec describes.
struct Parsed {
  std::vector<perf::Sample> samples;
  std::vector<perf::Lost> lost;
  std::vector<uint32_t> order;  // record types, as walked
  perf::WalkResult walked;
};
Parsed parse_ring(const SyntheticRing& ring, uint64_t* tail, bool read, uint32_t stack_bytes, size_t scratch_bytes) {
  const perf::RecordFormat format = perf::RecordFormat::of(sampling_spec(1'000'000, read, stack_bytes).attr());
  std::vector<uint8_t> scratch(scratch_bytes);
  Parsed out;
  out.walked = perf::walk_records(ring.data(), ring.size(), ring.head(), tail, scratch.data(), scratch.size(),
                                  [&](const perf::Record& record) {
                                    out.order.push_back(record.header.type);
                                    perf::Sample s;
                                    perf::Lost l;
                                    if (perf::parse_sample(format, record, &s)) out.samples.push_back(s);
                                    if (perf::parse_lost(format, record, &l)) out.lost.push_back(l);
                                  });
  return out;
}

TEST(RingRecords, FlatSamplesAndLossesParseInTheEnginesFormat) {
  for (const bool read : {true, false}) {
    SyntheticRing ring(256);
    uint64_t tail = 0;
    // 7 records of 24-32 bytes: the ring wraps, and the small records that
    // straddle its end are made whole in a scratch of 64 bytes (the
    // drain's own, on its stack, without stacks).
    for (int lap = 0; lap < 20; ++lap) {
      ring.push(PERF_RECORD_SAMPLE, sample_body(0x401000 + lap, kTid, 1000 * lap, read, 0));
      ring.push(PERF_RECORD_LOST, lost_body(lap, kTid + 1));
      ring.push(PERF_RECORD_THROTTLE, Body().u64(1).u64(2).u64(3).u32(kPid).u32(kTid).get());
      const Parsed p = parse_ring(ring, &tail, read, 0, 64);
      ASSERT_EQ(p.samples.size(), 1u) << "lap " << lap;
      ASSERT_EQ(p.lost.size(), 1u);
      EXPECT_EQ(p.order.size(), 3u);
      EXPECT_EQ(p.walked.too_large, 0u);
      EXPECT_EQ(p.samples[0].ip, 0x401000u + lap);
      EXPECT_EQ(p.samples[0].who.tid, kTid);
      EXPECT_EQ(p.samples[0].read_value, read ? 1000u * lap : 0u);
      EXPECT_EQ(p.samples[0].stack_size, 0u);
      EXPECT_EQ(p.lost[0].lost, static_cast<uint64_t>(lap));
      EXPECT_EQ(p.lost[0].who.tid, kTid + 1);
    }
  }
}

TEST(RingRecords, StackSampleAcrossTheWrapKeepsRegistersAndCopy) {
  constexpr uint32_t kStack = 512;
  SyntheticRing ring(2048);
  uint64_t tail = 0;
  ring.push(PERF_RECORD_SAMPLE, perf::payload(1600 - 8, 1));  // moves the next record across the end
  parse_ring(ring, &tail, true, kStack, 0);
  ring.push(PERF_RECORD_SAMPLE, sample_body(0x402000, kTid, 5'000'000, true, kStack, 300));
  const Parsed p = parse_ring(ring, &tail, true, kStack, 4096);
  ASSERT_EQ(p.samples.size(), 1u);
  const perf::Sample& s = p.samples[0];
  EXPECT_EQ(s.ip, 0x402000u);
  EXPECT_EQ(s.read_value, 5'000'000u);
  EXPECT_EQ(s.regs_abi, static_cast<uint64_t>(PERF_SAMPLE_REGS_ABI_64));
  ASSERT_EQ(s.reg_count, 3u);
  EXPECT_EQ(s.regs[perf::kUnwindRegisterBp], 0x7ffd0010u);
  EXPECT_EQ(s.regs[perf::kUnwindRegisterSp], 0x7ffd0000u);
  EXPECT_EQ(s.regs[perf::kUnwindRegisterIp], 0x402000u);
  EXPECT_EQ(s.stack_size, kStack);
  EXPECT_EQ(s.stack_copied, 300u);
  ASSERT_NE(s.stack, nullptr);
  EXPECT_EQ(s.stack[0], 5);
  EXPECT_EQ(s.stack[kStack - 1], static_cast<uint8_t>(5 + kStack - 1));
}

constexpr uint64_t kPeriod = 1'000'000;

TEST(ShareWeight, WholePeriodsWithTheRemainderCarried) {
  CpuShare share{0, 0};
  EXPECT_EQ(share_weight(share, 1'000'000, kPeriod), 1u);
  EXPECT_EQ(share_weight(share, 2'400'000, kPeriod), 1u);  // 1.4: 0.4 carried
  EXPECT_EQ(share_weight(share, 3'100'000, kPeriod), 1u);  // 0.7 + 0.4
  EXPECT_EQ(share_weight(share, 3'500'000, kPeriod), 1u);  // 0.4 + 0.1 rounds up: -0.5 carried
  EXPECT_EQ(share_weight(share, 3'600'000, kPeriod), 0u);  // 0.1 - 0.5
  EXPECT_EQ(share_weight(share, 6'000'000, kPeriod), 2u);  // 2.4 - 0.4
  EXPECT_EQ(share.remainder, 0);
}

// Whatever the counter's steps, the weights and the remainder add up to
// the counter: no time is made or lost, and the remainder stays within
// half a period.
TEST(ShareWeight, WeightsAddUpToTheCounter) {
  CpuShare share{0, 0};
  uint64_t value = 0, periods = 0;
  for (int i = 1; i < 2000; ++i) {
    value += static_cast<uint64_t>((i * 7919) % 3'300'000);  // 0 to 3.3 periods
    periods += share_weight(share, value, kPeriod);
    EXPECT_EQ(static_cast<int64_t>(periods * kPeriod) + share.remainder, static_cast<int64_t>(value)) << i;
    EXPECT_LE(share.remainder, static_cast<int64_t>(kPeriod / 2));
    EXPECT_GE(share.remainder, -static_cast<int64_t>(kPeriod / 2));
  }
}

TEST(ShareWeight, ANewThreadInTheSlotStartsAgain) {
  CpuShare share{0, 0};
  EXPECT_EQ(share_weight(share, 50'400'000, kPeriod), 50u);
  // The counter of a thread that took the slot since: below the last value.
  EXPECT_EQ(share_weight(share, 2'000'000, kPeriod), 2u);
  EXPECT_EQ(share.last, 2'000'000u);
  EXPECT_EQ(share.remainder, 0);
}

TEST(ShareWeight, AtMostAMillionPeriods) {
  CpuShare share{0, 0};
  EXPECT_EQ(share_weight(share, 5'000'000 * kPeriod, kPeriod), 1'000'000u);
}

TEST(TakeLost, ASampleKeepsOnePeriodAndCarriesTheLostTime) {
  uint64_t pending = 0;
  uint32_t weight = 4;
  EXPECT_EQ(take_lost(&pending, &weight), 0u);  // nothing lost
  EXPECT_EQ(weight, 4u);
  pending = 5;
  weight = 1;
  EXPECT_EQ(take_lost(&pending, &weight), 0u);  // a sample of its own period only
  EXPECT_EQ(pending, 5u);
  weight = 3;
  EXPECT_EQ(take_lost(&pending, &weight), 2u);
  EXPECT_EQ(weight, 1u);
  EXPECT_EQ(pending, 3u);
  weight = 10;
  EXPECT_EQ(take_lost(&pending, &weight), 3u);
  EXPECT_EQ(weight, 7u);
  EXPECT_EQ(pending, 0u);
}

// A thread's samples on one CPU with records lost between them, read as the
// drain reads them (perf_ring_drain.cc: a LOST record's periods pending on
// the ring, each sample's share of the counter, the lost periods taken from
// it): what the samples' PCs get plus what is counted lost is the
// thread's task-clock, and the lost periods are what the kernel reported.
TEST(TakeLost, LostRecordsAreChargedToTheSamplesAfterThem) {
  SyntheticRing ring(512);
  uint64_t tail = 0, pending = 0, value = 0;
  uint64_t to_pcs = 0, counted_lost = 0, reported_lost = 0;
  CpuShare share{0, 0};
  for (int lap = 0; lap < 50; ++lap) {
    // The kernel lost lap % 4 samples, then wrote the next one, which read
    // the counter after all of them.
    if (lap % 4 != 0) {
      ring.push(PERF_RECORD_LOST, lost_body(lap % 4, kTid));
      reported_lost += lap % 4;
    }
    value += kPeriod * (1 + lap % 4);
    ring.push(PERF_RECORD_SAMPLE, sample_body(0x401000, kTid, value, true, 0));
    const Parsed p = parse_ring(ring, &tail, true, 0, 64);
    for (const perf::Lost& l : p.lost) pending += l.lost;
    for (const perf::Sample& s : p.samples) {
      uint32_t weight = share_weight(share, s.read_value, kPeriod);
      counted_lost += take_lost(&pending, &weight);
      EXPECT_EQ(weight, 1u) << "lap " << lap << ": the sample's own period";
      to_pcs += weight;
    }
  }
  EXPECT_EQ(pending, 0u);
  EXPECT_EQ(counted_lost, reported_lost);
  EXPECT_EQ((to_pcs + counted_lost) * kPeriod, value);
}

TEST(StackBytes, RoomForThirtyTwoRecordsAndFourTicks) {
  // 512 KiB rings: 16 KiB copies at 1000 Hz (32 records), 8 KiB at 4000 Hz
  // (4 ticks of 16 records), never over 32 KiB.
  EXPECT_EQ(stack_bytes_for(128 * kPage, 1'000'000), (128 * kPage / 32 - 128) & ~size_t{7});
  EXPECT_EQ(stack_bytes_for(128 * kPage, 250'000), (128 * kPage / 64 - 128) & ~size_t{7});
  EXPECT_EQ(stack_bytes_for(1024 * kPage, 1'000'000), kMaxStackBytes);
  EXPECT_EQ(stack_bytes_for(kPage, 1'000'000) % 8, 0u);
}

}  // namespace
}  // namespace profiling::sampler::ring
