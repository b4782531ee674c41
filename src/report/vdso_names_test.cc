// The vDSO's functions named from profil's own (vdso_names.h): glibc
// lists the vDSO as "linux-vdso.so.1" in its link map, so dlsym gives the
// address of a function in it that the names must agree with.
#include "report/vdso_names.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace profiling::report {
namespace {

// This process's [vdso] line of /proc/self/maps as a mapping.
format::Mapping own_vdso_mapping() {
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    unsigned long long start = 0, end = 0;
    if (line.ends_with("[vdso]") && std::sscanf(line.c_str(), "%llx-%llx", &start, &end) == 2)
      return format::Mapping{start, end, 0, "[vdso]", ""};
  }
  return {};
}

TEST(VdsoNames, NamesTheAddressesOfTheProcessVdso) {
  const format::Mapping vdso = own_vdso_mapping();
  void* handle = ::dlopen("linux-vdso.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (vdso.start == 0 || handle == nullptr) GTEST_SKIP() << "no vDSO mapped";
  const auto gettime = reinterpret_cast<uint64_t>(::dlsym(handle, "__vdso_clock_gettime"));
  const auto getcpu = reinterpret_cast<uint64_t>(::dlsym(handle, "__vdso_getcpu"));
  ASSERT_TRUE(vdso.contains(gettime));
  ASSERT_GT(VdsoSymbols::own().functions(), 1u);
  // The global name of the two aliases, as perf prints it.
  ASSERT_NE(VdsoSymbols::own().lookup(gettime + 4 - vdso.start), nullptr);
  EXPECT_EQ(*VdsoSymbols::own().lookup(gettime + 4 - vdso.start), "__vdso_clock_gettime");

  format::Profile profile;
  profile.mappings.push_back(vdso);
  const uint32_t chain = profile.stacks.intern(std::vector<uint64_t>{gettime + 1}, false);
  profile.samples.push_back(format::Sample{.address = gettime + 8, .count = 3, .stack = chain});
  if (getcpu != 0) profile.samples.push_back(format::Sample{.address = getcpu, .count = 1});
  profile.samples.push_back(format::Sample{.address = vdso.start, .count = 1});  // the ELF header: no function
  EXPECT_EQ(name_vdso_code(&profile), getcpu != 0 ? 3u : 2u);
  ASSERT_NE(profile.frames_for(gettime + 8), nullptr);
  EXPECT_EQ(profile.frames_for(gettime + 8)->front().function, "__vdso_clock_gettime");
  EXPECT_EQ(profile.frames_for(gettime + 1)->front().function, "__vdso_clock_gettime");
  if (getcpu != 0) {
    EXPECT_EQ(profile.frames_for(getcpu)->front().function, "__vdso_getcpu");
  }
  EXPECT_EQ(profile.frames_for(vdso.start), nullptr);
  // Named once: frames already there are kept.
  EXPECT_EQ(name_vdso_code(&profile), 0u);
}

TEST(VdsoNames, AnotherKernelsVdsoIsLeftUnnamed) {
  const format::Mapping own = own_vdso_mapping();
  if (own.start == 0 || VdsoSymbols::own().functions() == 0) GTEST_SKIP() << "no vDSO mapped";
  // A mapping four times as long is not this kernel's image.
  format::Profile profile;
  profile.mappings.push_back(format::Mapping{0x7000'0000'0000, 0x7000'0000'0000 + 4 * (own.limit - own.start), 0,
                                             "[vdso]", ""});
  profile.samples.push_back(format::Sample{.address = 0x7000'0000'0000 + 0x800, .count = 1});
  EXPECT_EQ(name_vdso_code(&profile), 0u);
  // And an image that is no ELF names nothing.
  const char junk[64] = "not an ELF image";
  EXPECT_EQ(VdsoSymbols(junk, sizeof junk).functions(), 0u);
  EXPECT_EQ(VdsoSymbols(nullptr, 0).functions(), 0u);
}

}  // namespace
}  // namespace profiling::report
