// PrefetchedMemory on this process's own memory (process_vm_readv of
// itself): the ranges fetched serve reads without the reader beneath, one
// system call for all of them; a read outside them, or across two, goes
// beneath; a range running into an unmapped page holds what was read; the
// pages a walk read through a PageCachedMemory, fetched so, serve the next.
#include "interp/readers.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <vector>

namespace profiling::interp {
namespace {

// The reader beneath: this process's memory, counting the reads it serves.
class Counting final : public MemoryReader {
 public:
  bool read(uint64_t address, void* out, size_t size) override {
    ++reads;
    return local.read(address, out, size);
  }
  LocalMemory local;
  int reads = 0;
};

uint64_t address_of(const void* p) { return reinterpret_cast<uint64_t>(p); }

TEST(PrefetchedMemory, ServesTheRangesFetchedInOneCall) {
  std::vector<uint64_t> a(64), b(16);
  for (size_t i = 0; i < a.size(); ++i) a[i] = 1000 + i;
  for (size_t i = 0; i < b.size(); ++i) b[i] = 2000 + i;
  Counting below;
  PrefetchedMemory memory(::getpid(), below);
  const PrefetchedMemory::Range ranges[] = {{address_of(a.data()), a.size() * 8}, {address_of(b.data()), 8 * 8}};
  memory.fetch(ranges, 2);
  EXPECT_EQ(memory.calls(), 1u);
  // Changed after the fetch: what is read is what was fetched.
  a[3] = 0;
  uint64_t value = 0;
  ASSERT_TRUE(read_u64(memory, address_of(&a[3]), &value));
  EXPECT_EQ(value, 1003u);
  ASSERT_TRUE(read_u64(memory, address_of(&b[7]), &value));
  EXPECT_EQ(value, 2007u);
  uint64_t two[2] = {};
  ASSERT_TRUE(memory.read(address_of(&a[62]), two, sizeof two));
  EXPECT_EQ(two[1], 1063u);
  EXPECT_EQ(below.reads, 0);
  // Past the second range's 8 words: from beneath.
  ASSERT_TRUE(read_u64(memory, address_of(&b[8]), &value));
  EXPECT_EQ(value, 2008u);
  EXPECT_EQ(below.reads, 1);
  // A read running off the end of a range: from beneath, whole.
  ASSERT_TRUE(memory.read(address_of(&b[7]), two, sizeof two));
  EXPECT_EQ(two[1], 2008u);
  EXPECT_EQ(below.reads, 2);
  // Fetching again forgets the last ranges.
  memory.fetch(ranges + 1, 1);
  ASSERT_TRUE(read_u64(memory, address_of(&a[3]), &value));
  EXPECT_EQ(value, 0u);
  EXPECT_EQ(below.reads, 3);
}

TEST(PrefetchedMemory, ARangeCutByAnUnmappedPageHoldsWhatWasRead) {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  auto* bytes = static_cast<uint8_t*>(::mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(bytes, MAP_FAILED);
  ASSERT_EQ(::munmap(bytes + page, page), 0);
  std::memset(bytes, 7, page);
  Counting below;
  PrefetchedMemory memory(::getpid(), below);
  // The last 16 bytes of the mapped page, and 16 of the unmapped one.
  const PrefetchedMemory::Range range{address_of(bytes + page - 16), 32};
  memory.fetch(&range, 1);
  uint64_t value = 0;
  ASSERT_TRUE(read_u64(memory, address_of(bytes + page - 8), &value));
  EXPECT_EQ(value, 0x0707070707070707u);
  EXPECT_EQ(below.reads, 0);
  ::munmap(bytes, page);
}

// python_frames.cc's late read: the pages one walk read through the page
// cache, fetched in one call before the next walk, serve all of its reads
// (none beneath), with what the memory holds at the fetch.
TEST(PageCachedMemory, ThePagesAWalkReadServeTheNextWalkFetchedInOneCall) {
  const size_t page = PageCachedMemory::kPage;
  auto* bytes = static_cast<uint8_t*>(::mmap(nullptr, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(bytes, MAP_FAILED);
  Counting below;
  PrefetchedMemory ahead(::getpid(), below);
  PageCachedMemory cached(ahead);
  // A walk: the third page, then the first (a chain goes where it points).
  const uint64_t third = address_of(bytes + 2 * page + 8), first = address_of(bytes + 16);
  uint64_t value = 0;
  bytes[2 * page + 8] = 1;
  ASSERT_TRUE(read_u64(cached, third, &value));
  ASSERT_TRUE(read_u64(cached, first, &value));
  EXPECT_EQ(below.reads, 2);
  uint64_t pages[PageCachedMemory::kPages];
  ASSERT_EQ(cached.pages(pages, PageCachedMemory::kPages), 2u);
  EXPECT_EQ(pages[0], address_of(bytes + 2 * page));
  EXPECT_EQ(pages[1], address_of(bytes));
  // The next walk, the memory moved on.
  bytes[2 * page + 8] = 2;
  cached.forget();
  PrefetchedMemory::Range ranges[2];
  for (size_t i = 0; i < 2; ++i) ranges[i] = {pages[i], page};
  ahead.fetch(ranges, 2);
  ASSERT_TRUE(read_u64(cached, third, &value));
  EXPECT_EQ(value, 2u);
  ASSERT_TRUE(read_u64(cached, first, &value));
  EXPECT_EQ(below.reads, 2);
  EXPECT_EQ(ahead.calls(), 1u);
  ::munmap(bytes, 3 * page);
}

}  // namespace
}  // namespace profiling::interp
