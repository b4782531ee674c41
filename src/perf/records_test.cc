// Parsing each record type from synthetic bytes laid out as
// include/uapi/linux/perf_event.h describes them, and one real ring: an
// event on this thread, read back.
#include "perf/records.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "perf/event.h"
#include "perf/test_ring.h"

namespace profiling::perf {
namespace {

constexpr uint64_t kIdType = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;

RecordFormat stack_format() {
  RecordFormat f;
  f.sample_type = PERF_SAMPLE_IP | kIdType | PERF_SAMPLE_PERIOD | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
  f.regs_user = kUnwindRegisters;
  f.sample_id_all = true;
  return f;
}

Record as_record(const std::vector<uint8_t>& bytes) {
  Record r;
  std::memcpy(&r.header, bytes.data(), sizeof r.header);
  r.bytes = bytes.data();
  r.size = bytes.size();
  return r;
}

std::vector<uint8_t> record_of(uint32_t type, const Body& body, uint16_t misc = 0) {
  SyntheticRing ring(4096);
  return ring.push(type, body.get(), misc);
}

Body& trailer(Body& b, uint32_t pid, uint32_t tid, uint64_t time, uint32_t cpu) {
  return b.u32(pid).u32(tid).u64(time).u32(cpu).u32(0);
}

std::vector<uint8_t> sample_with_stack(uint64_t stack_size, uint64_t copied) {
  Body b;
  b.u64(0x401000).u32(10).u32(11).u64(12345).u32(1).u32(0).u64(1000000);
  b.u64(PERF_SAMPLE_REGS_ABI_64).u64(0x7ff0).u64(0x7fe0).u64(0x401000);  // bp, sp, ip
  b.u64(stack_size);
  std::vector<uint8_t> stack = payload(stack_size, 3);
  b.bytes(stack.data(), stack.size());
  if (stack_size != 0) b.u64(copied);
  return record_of(PERF_RECORD_SAMPLE, b);
}

TEST(ParseSample, ReadsRegistersAndTheStackCopy) {
  const auto bytes = sample_with_stack(64, 40);
  Sample s;
  ASSERT_TRUE(parse_sample(stack_format(), as_record(bytes), &s));
  EXPECT_EQ(s.ip, 0x401000u);
  EXPECT_EQ(s.who.pid, 10u);
  EXPECT_EQ(s.who.tid, 11u);
  EXPECT_EQ(s.who.time, 12345u);
  EXPECT_EQ(s.who.cpu, 1u);
  EXPECT_EQ(s.period, 1000000u);
  ASSERT_EQ(s.reg_count, 3u);
  EXPECT_EQ(s.regs[kUnwindRegisterBp], 0x7ff0u);
  EXPECT_EQ(s.regs[kUnwindRegisterSp], 0x7fe0u);
  EXPECT_EQ(s.regs[kUnwindRegisterIp], 0x401000u);
  EXPECT_EQ(s.stack_size, 64u);
  EXPECT_EQ(s.stack_copied, 40u);
  ASSERT_NE(s.stack, nullptr);
  EXPECT_EQ(s.stack[0], 3);
  EXPECT_EQ(s.stack[63], static_cast<uint8_t>(3 + 63));
}

TEST(ParseSample, EmptyStackHasNoDynSize) {
  const auto bytes = sample_with_stack(0, 0);
  Sample s;
  ASSERT_TRUE(parse_sample(stack_format(), as_record(bytes), &s));
  EXPECT_EQ(s.stack, nullptr);
  EXPECT_EQ(s.stack_copied, 0u);
}

TEST(ParseSample, TruncatedRecordsAreRefusedAtEveryLength) {
  const auto whole = sample_with_stack(64, 64);
  for (size_t cut = sizeof(perf_event_header); cut < whole.size(); cut += 8) {
    std::vector<uint8_t> part(whole.begin(), whole.begin() + static_cast<long>(cut));
    Record r = as_record(whole);
    r.bytes = part.data();
    r.size = part.size();
    Sample s;
    EXPECT_FALSE(parse_sample(stack_format(), r, &s)) << "cut at " << cut;
  }
}

TEST(ParseSample, DynSizeBeyondTheRoomIsClamped) {
  const auto bytes = sample_with_stack(32, 4096);
  Sample s;
  ASSERT_TRUE(parse_sample(stack_format(), as_record(bytes), &s));
  EXPECT_EQ(s.stack_copied, 32u);
}

TEST(ParseSample, UnknownLayoutIsRefused) {
  RecordFormat f = stack_format();
  f.sample_type |= PERF_SAMPLE_RAW;
  Sample s;
  EXPECT_FALSE(parse_sample(f, as_record(sample_with_stack(8, 8)), &s));
}

TEST(ParseMmap, Mmap2WithInodeAndWithBuildId) {
  const RecordFormat f = stack_format();
  Body a;
  a.u32(10).u32(10).u64(0x400000).u64(0x2000).u64(0x1000).u32(8).u32(1).u64(777).u64(3);
  a.u32(PROT_READ | PROT_EXEC).u32(MAP_PRIVATE).text("/usr/bin/prog");
  trailer(a, 10, 10, 5, 0);
  Mmap m;
  ASSERT_TRUE(parse_mmap(f, as_record(record_of(PERF_RECORD_MMAP2, a)), &m));
  EXPECT_EQ(m.address, 0x400000u);
  EXPECT_EQ(m.length, 0x2000u);
  EXPECT_EQ(m.file_offset, 0x1000u);
  EXPECT_EQ(m.inode, 777u);
  EXPECT_EQ(m.major, 8u);
  EXPECT_TRUE(m.executable);
  EXPECT_STREQ(m.filename, "/usr/bin/prog");
  EXPECT_EQ(m.who.time, 5u);
  EXPECT_EQ(m.build_id_size, 0u);

  Body b;
  b.u32(10).u32(12).u64(0x7f0000).u64(0x1000).u64(0);
  uint8_t id[24] = {20};
  for (int i = 0; i < 20; ++i) id[4 + i] = static_cast<uint8_t>(0xa0 + i);
  b.bytes(id, sizeof id).u32(PROT_READ).u32(MAP_PRIVATE).text("/lib/x.so");
  trailer(b, 10, 12, 6, 1);
  ASSERT_TRUE(parse_mmap(f, as_record(record_of(PERF_RECORD_MMAP2, b, PERF_RECORD_MISC_MMAP_BUILD_ID)), &m));
  EXPECT_EQ(m.build_id_size, 20u);
  EXPECT_EQ(m.build_id[0], 0xa0);
  EXPECT_EQ(m.build_id[19], 0xa0 + 19);
  EXPECT_FALSE(m.executable);
  EXPECT_EQ(m.tid, 12u);
  EXPECT_STREQ(m.filename, "/lib/x.so");
}

TEST(ParseMmap, FilenameWithoutTerminatorIsRefused) {
  Body a;
  a.u32(10).u32(10).u64(0x400000).u64(0x2000).u64(0).u32(8).u32(1).u64(777).u64(3);
  a.u32(PROT_EXEC).u32(0);
  a.bytes("abcdefgh", 8);  // no NUL before the trailer
  trailer(a, 10, 10, 5, 0);
  Mmap m;
  EXPECT_FALSE(parse_mmap(stack_format(), as_record(record_of(PERF_RECORD_MMAP2, a)), &m));
}

TEST(ParseOthers, CommForkExitLostThrottle) {
  const RecordFormat f = stack_format();
  Body c;
  c.u32(20).u32(20).text("python3");
  trailer(c, 20, 20, 9, 0);
  Comm comm;
  ASSERT_TRUE(parse_comm(f, as_record(record_of(PERF_RECORD_COMM, c, PERF_RECORD_MISC_COMM_EXEC)), &comm));
  EXPECT_STREQ(comm.name, "python3");
  EXPECT_TRUE(comm.exec);

  Body t;
  t.u32(21).u32(20).u32(21).u32(20).u64(99);
  trailer(t, 21, 21, 99, 1);
  Task task;
  ASSERT_TRUE(parse_task(f, as_record(record_of(PERF_RECORD_FORK, t)), &task));
  EXPECT_EQ(task.pid, 21u);
  EXPECT_EQ(task.ppid, 20u);
  EXPECT_EQ(task.time, 99u);
  ASSERT_TRUE(parse_task(f, as_record(record_of(PERF_RECORD_EXIT, t)), &task));
  EXPECT_FALSE(parse_task(f, as_record(record_of(PERF_RECORD_COMM, c)), &task));

  Body l;
  l.u64(7).u64(42);
  trailer(l, 20, 22, 100, 0);
  Lost lost;
  ASSERT_TRUE(parse_lost(f, as_record(record_of(PERF_RECORD_LOST, l)), &lost));
  EXPECT_EQ(lost.lost, 42u);
  EXPECT_EQ(lost.who.tid, 22u);

  Body th;
  th.u64(5).u64(6).u64(7);
  trailer(th, 20, 20, 5, 0);
  Throttle throttle;
  ASSERT_TRUE(parse_throttle(f, as_record(record_of(PERF_RECORD_THROTTLE, th)), &throttle));
  EXPECT_EQ(throttle.id, 6u);

  // Too short for its trailer.
  Body short_lost;
  short_lost.u64(7);
  EXPECT_FALSE(parse_lost(f, as_record(record_of(PERF_RECORD_LOST, short_lost)), &lost));

  Body rd;
  rd.u32(20).u32(23).u64(1'234'567);
  trailer(rd, 20, 23, 101, 0);
  Read read;
  ASSERT_TRUE(parse_read(f, as_record(record_of(PERF_RECORD_READ, rd)), &read));
  EXPECT_EQ(read.tid, 23u);
  EXPECT_EQ(read.value, 1'234'567u);
  EXPECT_EQ(read.who.time, 101u);
  // A read_format with more than the count is not parsed as the count.
  RecordFormat with_times = f;
  with_times.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED;
  EXPECT_FALSE(parse_read(with_times, as_record(record_of(PERF_RECORD_READ, rd)), &read));
}

TEST(ParseSample, SampleIdBytesFollowsTheFormat) {
  RecordFormat f;
  f.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_IDENTIFIER;
  f.sample_id_all = true;
  EXPECT_EQ(sample_id_bytes(f), 24u);
  f.sample_id_all = false;
  EXPECT_EQ(sample_id_bytes(f), 0u);
}

// The kernel's own records: a task-clock event on this thread with
// registers and stack, read back through RingReader.
TEST(RealRing, SamplesOfThisThreadParse) {
  EventSpec spec;
  spec.period_ns = 100'000;
  spec.sample_type = kIdType;
  spec.regs_user = kUnwindRegisters;
  spec.stack_bytes = 1024;
  const perf_event_attr attr = spec.attr();
  const long fd = open_event(attr, 0, -1);
  if (fd == -EACCES || fd == -EPERM || fd == -ENOENT || fd == -ENOSYS)
    GTEST_SKIP() << "perf events refused here: " << std::strerror(static_cast<int>(-fd));
  ASSERT_GE(fd, 0) << std::strerror(static_cast<int>(-fd));
  const size_t bytes = 17 * 4096;
  void* map = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, static_cast<int>(fd), 0);
  ASSERT_NE(map, MAP_FAILED);
  volatile uint64_t sink = 0;
  for (uint64_t i = 0; i < 20'000'000; ++i) sink = sink + i * i;
  RingReader ring(map, bytes);
  std::vector<uint8_t> scratch(65536);
  const RecordFormat format = RecordFormat::of(attr);
  unsigned samples = 0, ours = 0, with_stack = 0;
  ring.read(scratch.data(), scratch.size(), [&](const Record& r) {
    Sample s;
    if (r.header.type != PERF_RECORD_SAMPLE) return;
    ASSERT_TRUE(parse_sample(format, r, &s));
    ++samples;
    if (s.who.tid == static_cast<uint32_t>(::gettid()) && s.who.pid == static_cast<uint32_t>(::getpid())) ++ours;
    if (s.reg_count == 3 && s.stack_size == 1024 && s.stack_copied > 0 && s.regs[kUnwindRegisterIp] == s.ip) ++with_stack;
  });
  ::munmap(map, bytes);
  ::close(static_cast<int>(fd));
  EXPECT_GT(samples, 0u);
  EXPECT_EQ(ours, samples);
  EXPECT_EQ(with_stack, samples);
  EXPECT_EQ(ring.valid(), true);
}

}  // namespace
}  // namespace profiling::perf
