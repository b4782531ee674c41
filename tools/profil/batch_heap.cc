#include "batch_heap.h"

#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>

namespace profiling::cli {
namespace {
constexpr uintptr_t kHugePage = uintptr_t{2} << 20;
// A node html report touches about 16 MB, a cc1 one about 40 MB: one pad
// holds either, and a larger job grows the heap as before (4 KB pages).
constexpr size_t kHeapPad = size_t{64} << 20;
// Blocks below this come from the heap instead of a mapping of their own.
// A growing vector or string passes through every size up to it, and each
// fresh mapping is faulted in again page by page (glibc's threshold starts
// at 128 KB). Above it a mapping is still better: freed, it leaves no hole
// in the heap (at 32 MB a 100,000-sample folded report peaked at 205 MB,
// 186 MB at 8 MB, as without this file's tuning).
constexpr int kLargestHeapBlock = 8 << 20;
}  // namespace

void use_batch_heap() {
  static bool used = false;  // one pad is enough; the main thread alone calls
  if (used) return;
  used = true;
  ::mallopt(M_MMAP_THRESHOLD, kLargestHeapBlock);
  ::mallopt(M_TRIM_THRESHOLD, static_cast<int>(4 * kHeapPad));
  ::mallopt(M_TOP_PAD, static_cast<int>(kHeapPad));
  const auto heap_end = reinterpret_cast<uintptr_t>(::sbrk(0));
  // A block larger than the heap's free top makes malloc grow the heap now,
  // by the block and the pad; freed, it stays as the top of the heap.
  // (Volatile: the compiler may otherwise drop a malloc and free of a block
  // nothing reads.)
  void* volatile block = std::malloc(size_t{1} << 20);
  std::free(block);
  const auto grown_end = reinterpret_cast<uintptr_t>(::sbrk(0));
  const uintptr_t first = (heap_end + kHugePage - 1) & ~(kHugePage - 1);
  const uintptr_t last = grown_end & ~(kHugePage - 1);
  if (heap_end == static_cast<uintptr_t>(-1) || last <= first) return;
  ::madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
}

}  // namespace profiling::cli
