#include "sampler/bins.h"

#include <gtest/gtest.h>

namespace profiling::sampler {
namespace {

Region region(uint64_t offset, uint32_t scale, size_t nbins, BinWidth w = BinWidth::u16,
              BinArithmetic a = BinArithmetic::printed) {
  Region r;
  r.offset = offset;
  r.scale = scale;
  r.nbins = nbins;
  r.width = w;
  r.arithmetic = a;
  return r;
}

TEST(BinIndex, PrintedFormulaScales) {
  // NetBSD/OpenBSD profil(2): 65536 maps each bin to 2 bytes, 32768 to 4,
  // 16384 to 8.
  EXPECT_EQ(bin_index(0x1000 + 0, 0x1000, 65536, BinWidth::u16, BinArithmetic::printed), 0u);
  EXPECT_EQ(bin_index(0x1000 + 1, 0x1000, 65536, BinWidth::u16, BinArithmetic::printed), 0u);
  EXPECT_EQ(bin_index(0x1000 + 2, 0x1000, 65536, BinWidth::u16, BinArithmetic::printed), 1u);
  EXPECT_EQ(bin_index(0x1000 + 7, 0x1000, 32768, BinWidth::u16, BinArithmetic::printed), 1u);
  EXPECT_EQ(bin_index(0x1000 + 8, 0x1000, 32768, BinWidth::u16, BinArithmetic::printed), 2u);
  EXPECT_EQ(bin_index(0x1000 + 15, 0x1000, 16384, BinWidth::u16, BinArithmetic::printed), 1u);
  EXPECT_EQ(bin_index(0x1000 + 16, 0x1000, 16384, BinWidth::u16, BinArithmetic::printed), 2u);
}

TEST(BinIndex, BelowOffsetIsNeverABin) {
  // A PC below offset must not wrap around into a bin.
  EXPECT_EQ(bin_index(0xfff, 0x1000, 65536, BinWidth::u16, BinArithmetic::printed), kNoBin);
  EXPECT_EQ(bin_index(0, 1, 65536, BinWidth::u16, BinArithmetic::illumos), kNoBin);
}

TEST(BinIndex, Uint32BinsDivideByFour) {
  // glibc sprofil with PROF_UINT: (pc - offset) / sizeof(int) * scale / 65536.
  EXPECT_EQ(bin_index(0x1000 + 3, 0x1000, 65536, BinWidth::u32, BinArithmetic::printed), 0u);
  EXPECT_EQ(bin_index(0x1000 + 4, 0x1000, 65536, BinWidth::u32, BinArithmetic::printed), 1u);
}

TEST(BinIndex, IllumosRoundingDiffersForOddDistance) {
  // pc - offset = 9, scale 43691: printed [(9)/2] * 43691 / 65536 = 2;
  // illumos 9 * 43691 / 131072 = 3.
  EXPECT_EQ(bin_index(109, 100, 43691, BinWidth::u16, BinArithmetic::printed), 2u);
  EXPECT_EQ(bin_index(109, 100, 43691, BinWidth::u16, BinArithmetic::illumos), 3u);
  // Power-of-two scales agree for every distance.
  for (uint64_t d = 0; d < 4096; ++d)
    for (uint32_t s : {2u, 4096u, 16384u, 32768u, 65536u})
      ASSERT_EQ(bin_index(d, 0, s, BinWidth::u16, BinArithmetic::printed),
                bin_index(d, 0, s, BinWidth::u16, BinArithmetic::illumos))
          << d << " " << s;
}

TEST(BinIndex, NoOverflowAtTheTopOfTheAddressSpace) {
  // 64-bit integer arithmetic without overflow: the split multiply matches
  // 128-bit arithmetic.
  const uint64_t pcs[] = {~uint64_t{0}, 0x7fffffffffffull, 0x8000000000000000ull};
  for (uint64_t pc : pcs)
    for (uint32_t s : {1u, 3u, 43691u, 65535u, 65536u}) {
      unsigned __int128 want = static_cast<unsigned __int128>(pc / 2) * s / 65536;
      EXPECT_EQ(bin_index(pc, 0, s, BinWidth::u16, BinArithmetic::printed), static_cast<uint64_t>(want));
      unsigned __int128 want_illumos = static_cast<unsigned __int128>(pc) * s / 131072;
      EXPECT_EQ(bin_index(pc, 0, s, BinWidth::u16, BinArithmetic::illumos),
                static_cast<uint64_t>(want_illumos));
    }
}

TEST(RegionEnd, IsTheFirstAddressPastTheLastBin) {
  for (uint32_t scale : {1u, 2u, 3u, 1000u, 16384u, 32768u, 43691u, 65535u, 65536u})
    for (BinArithmetic a : {BinArithmetic::printed, BinArithmetic::illumos})
      for (BinWidth w : {BinWidth::u16, BinWidth::u32}) {
        Region r = region(0x400001, scale, 37, w, a);
        uint64_t end = region_end(r);
        ASSERT_GT(end, r.offset);
        EXPECT_LT(bin_index(end - 1, r), r.nbins) << scale;
        EXPECT_GE(bin_index(end, r), r.nbins) << scale;
      }
  EXPECT_EQ(region_end(region(100, 65536, 0)), 100u);
}

}  // namespace
}  // namespace profiling::sampler
