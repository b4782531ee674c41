// The saturating adds as the bins need them. What a fault inside them does
// is the sampler's fault guard's to decide (sampler/fault_guard_test.cc).
#include "base/safe_access.h"

#include <gtest/gtest.h>

namespace profiling::base {
namespace {

TEST(SafeAccess, SaturatesInsteadOfWrapping) {
  uint16_t bin = 65530;
  EXPECT_EQ(profil_safe_add_u16(&bin, 3, 65535), 0);
  EXPECT_EQ(bin, 65533);
  EXPECT_EQ(profil_safe_add_u16(&bin, 10, 65535), kSafeAccessAtLimit);
  EXPECT_EQ(bin, 65535);
  EXPECT_EQ(profil_safe_add_u16(&bin, 1, 65535), kSafeAccessAtLimit);
  EXPECT_EQ(bin, 65535);
  uint32_t wide = 0xfffffffe;
  EXPECT_EQ(profil_safe_add_u32(&wide, 5, 0xffffffffu), kSafeAccessAtLimit);
  EXPECT_EQ(wide, 0xffffffffu);
}

TEST(SafeAccess, SolarisLimitStopsAt32767) {
  uint16_t bin = 32760;
  EXPECT_EQ(profil_safe_add_u16(&bin, 6, 32767), 0);
  EXPECT_EQ(profil_safe_add_u16(&bin, 6, 32767), kSafeAccessAtLimit);
  EXPECT_EQ(bin, 32767);
}

}  // namespace
}  // namespace profiling::base
