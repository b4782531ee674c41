#include "batch_heap.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace profiling::cli {
namespace {

long minor_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

// Writes every byte of a new block of size bytes, frees it, and gives the
// page faults that took.
long faults_to_fill(size_t size) {
  const long before = minor_faults();
  char* volatile block = static_cast<char*>(std::malloc(size));
  std::memset(block, 1, size);
  std::free(block);
  return minor_faults() - before;
}

// The VmFlags lines of the [heap] mappings in /proc/self/smaps (madvise
// splits the heap where the advised part begins).
std::string heap_flags() {
  std::ifstream smaps("/proc/self/smaps");
  std::string line, flags;
  bool in_heap = false;
  while (std::getline(smaps, line)) {
    if (line.find(" [heap]") != std::string::npos) in_heap = true;
    if (line.rfind("VmFlags:", 0) == 0) {
      if (in_heap) flags += line + "\n";
      in_heap = false;
    }
  }
  return flags;
}

// One process for the whole file: use_batch_heap acts once per process.
TEST(BatchHeap, FourMegabytesFreedAndAskedForAgainAreNotFaultedInAgain) {
  use_batch_heap();
  const size_t size = size_t{4} << 20;  // above glibc's 128 KB mapping threshold, under ours
  const long first = faults_to_fill(size);
  const long again = faults_to_fill(size);
  // 1,024 pages: a fresh mapping faults each in (fewer with huge pages).
  // Reused heap memory is already there: a handful of faults at most.
  EXPECT_LT(again, 16) << "first fill " << first << " faults";
  // The block came from the heap, not a mapping of its own.
  void* block = std::malloc(size);
  const auto address = reinterpret_cast<uintptr_t>(block);
  EXPECT_LT(address, reinterpret_cast<uintptr_t>(sbrk(0)));
  std::free(block);
}

TEST(BatchHeap, TheHeapAsksForHugePages) {
  use_batch_heap();
  use_batch_heap();  // a second call does nothing
  std::ifstream mode("/sys/kernel/mm/transparent_hugepage/enabled");
  if (!mode) GTEST_SKIP() << "this kernel has no transparent huge pages";
  // VmFlags "hg": madvise(MADV_HUGEPAGE) took on the heap (proc(5)).
  const std::string flags = heap_flags();
  EXPECT_NE(flags.find(" hg"), std::string::npos) << flags;
}

}  // namespace
}  // namespace profiling::cli
