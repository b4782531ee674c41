// The fault guard with base/safe_access.S: a buffer that goes away under
// a store or a load is a returned fault, not a crash; any other fault
// still kills.
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "base/safe_access.h"
#include "sampler/sampler.h"

namespace profiling::sampler {
namespace {

using base::kSafeAccessFault;

TEST(SafeAccess, AFaultReturnsInsteadOfKilling) {
  install_fault_guard();
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* p = mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  auto* bins = static_cast<uint16_t*>(p);
  EXPECT_EQ(profil_safe_add_u16(bins, 1, 65535), 0);
  EXPECT_EQ(bins[0], 1);
  ASSERT_EQ(mprotect(p, page, PROT_READ), 0);
  EXPECT_EQ(profil_safe_add_u16(bins, 1, 65535), kSafeAccessFault);  // read-only
  ASSERT_EQ(munmap(p, page), 0);
  EXPECT_EQ(profil_safe_add_u16(bins, 1, 65535), kSafeAccessFault);  // unmapped
  EXPECT_EQ(profil_safe_add_u32(reinterpret_cast<uint32_t*>(p), 1, ~0u), kSafeAccessFault);
  EXPECT_EQ(profil_safe_store_u64(reinterpret_cast<uint64_t*>(p), 42), kSafeAccessFault);
}

TEST(SafeAccess, ALoadFaultLeavesTheValueAlone) {
  install_fault_guard();
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* p = mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  static_cast<uint64_t*>(p)[0] = 0x1122334455667788u;
  uint64_t value = 7;
  EXPECT_EQ(profil_safe_load_u64(p, &value), 0);
  EXPECT_EQ(value, 0x1122334455667788u);
  ASSERT_EQ(munmap(p, page), 0);
  value = 7;
  EXPECT_EQ(profil_safe_load_u64(p, &value), kSafeAccessFault);
  EXPECT_EQ(value, 7u);
}

TEST(SafeAccessDeathTest, OtherFaultsStillKill) {
  install_fault_guard();
  EXPECT_EXIT(
      {
        volatile int* null_pointer = nullptr;
        *null_pointer = 1;
      },
      ::testing::KilledBySignal(SIGSEGV), "");
}

}  // namespace
}  // namespace profiling::sampler
