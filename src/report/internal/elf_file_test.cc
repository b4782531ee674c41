// ElfFile's answers for what a profile may name in place of an object, which
// the symbolizer's warnings and its search for a gone program's debug file
// rely on: a regular ELF file opens; a FIFO, a directory, a missing path and
// a file that is not ELF each say why (the last with its Elf kept, so that
// it is not taken for a program that is gone).
#include "report/internal/elf_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace profiling::report::internal {
namespace {

TEST(ElfFile, OpensThisProgramWithItsBuildId) {
  ElfFile file;
  EXPECT_EQ(file.open("/proc/self/exe"), "");
  ASSERT_NE(file.elf, nullptr);
  const std::string id = file.build_id();
  EXPECT_EQ(id, elf_build_id(file.elf));
  // GNU ld's default --build-id is SHA-1: 20 bytes, 40 hex digits.
  EXPECT_EQ(id.size(), 40u) << id;
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos) << id;
  const int fd = file.release();
  EXPECT_GE(fd, 0);
  EXPECT_EQ(file.elf, nullptr);
  EXPECT_EQ(file.fd, -1);
  close(fd);
}

TEST(ElfFile, SaysWhyWhatIsNotAnObjectCannotBeRead) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / ("profil_elf_file_test." + std::to_string(getpid()));
  ASSERT_TRUE(std::filesystem::create_directory(dir));
  const std::string fifo = dir / "fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  ElfFile from_fifo;
  EXPECT_EQ(from_fifo.open(fifo), "not a regular file");  // and did not block
  EXPECT_EQ(from_fifo.elf, nullptr);

  ElfFile from_dir;
  EXPECT_EQ(from_dir.open(dir), "Is a directory");

  ElfFile missing;
  EXPECT_EQ(missing.open(dir / "gone"), "No such file or directory");
  EXPECT_EQ(missing.elf, nullptr);

  const std::string text = dir / "text";
  std::ofstream(text) << "not an object\n";
  ElfFile from_text;
  EXPECT_EQ(from_text.open(text), "not an ELF object");
  EXPECT_NE(from_text.elf, nullptr);
  EXPECT_EQ(from_text.build_id(), "");
  std::filesystem::remove_all(dir);
}

TEST(Hex, LowercaseTwoDigitsAByte) {
  const unsigned char bytes[] = {0x00, 0x0f, 0xa5, 0xff};
  EXPECT_EQ(hex(bytes, sizeof bytes), "000fa5ff");
  EXPECT_EQ(hex(bytes, 0), "");
}

}  // namespace
}  // namespace profiling::report::internal
