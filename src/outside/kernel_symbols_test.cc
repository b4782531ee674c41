#include "outside/kernel_symbols.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

namespace profiling::outside {
namespace {

std::string write_kallsyms(const std::string& text) {
  char path[] = "/tmp/profil-kallsyms-XXXXXX";
  const int fd = ::mkstemp(path);
  ::close(fd);
  std::ofstream(path) << text;
  return path;
}

TEST(KernelSymbols, NamesTheFunctionContainingAnAddressAndItsModule) {
  const std::string path = write_kallsyms(
      "ffffffff81000000 T _stext\n"
      "ffffffff81000100 t do_work\n"
      "ffffffff81000200 D some_data\n"
      "ffffffff81000300 W weak_fn\n"
      "ffffffffc0001000 t ext4_read\t[ext4]\n");
  const KernelSymbols k = KernelSymbols::read(path);
  ::unlink(path.c_str());
  ASSERT_FALSE(k.empty());
  EXPECT_EQ(k.frame_of(0xffffffff81000150).function, "do_work");
  EXPECT_EQ(k.frame_of(0xffffffff81000250).function, "do_work");  // data is not a function
  EXPECT_EQ(k.frame_of(0xffffffff81000300).function, "weak_fn");
  EXPECT_EQ(k.frame_of(0xffffffffc0001010).function, "ext4_read [ext4]");
  EXPECT_EQ(k.frame_of(0xffffffff80000000).function, "0xffffffff80000000");
}

TEST(KernelSymbols, HiddenAddressesGiveNoSymbols) {
  // kptr_restrict: every address reads 0.
  const std::string path = write_kallsyms("0000000000000000 T _stext\n0000000000000000 t do_work\n");
  EXPECT_TRUE(KernelSymbols::read(path).empty());
  ::unlink(path.c_str());
}

TEST(KernelSymbols, ThisMachinesKallsymsNameTheSystemCallEntryWhenReadable) {
  const KernelSymbols k = KernelSymbols::read();
  if (k.empty()) GTEST_SKIP() << "/proc/kallsyms shows no addresses to this user (kptr_restrict)";
  std::ifstream in("/proc/kallsyms");
  std::string line;
  uint64_t entry = 0;
  while (std::getline(in, line))
    if (line.size() > 19 && line.compare(19, std::string::npos, "entry_SYSCALL_64") == 0)
      entry = std::strtoull(line.c_str(), nullptr, 16);
  ASSERT_NE(entry, 0u);
  EXPECT_EQ(k.frame_of(entry + 1).function, "entry_SYSCALL_64");
}

}  // namespace
}  // namespace profiling::outside
