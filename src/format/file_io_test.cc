// read_file / write_file_atomically: whole files, errors naming the path,
// and no half file or temporary left behind.
#include "format/file_io.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>

namespace profiling::format {
namespace {

class FileIoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/profil_file_io_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(FileIoTest, WritesThenReadsEveryByte) {
  std::string bytes;
  for (int i = 0; i < 300000; ++i) bytes.push_back(static_cast<char>(i * 7));
  std::string path = (dir_ / "profile.out").string();
  write_file_atomically(path, bytes);
  EXPECT_EQ(read_file(path), bytes);
  write_file_atomically(path, "short");
  EXPECT_EQ(read_file(path), "short");
  // Only the file itself: the temporary was renamed, not left beside it.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_), std::filesystem::directory_iterator()), 1);
}

TEST_F(FileIoTest, RelativePathAndEmptyFile) {
  std::filesystem::path cwd = std::filesystem::current_path();
  std::filesystem::current_path(dir_);
  write_file_atomically("relative.out", "");
  EXPECT_EQ(read_file("relative.out"), "");
  std::filesystem::current_path(cwd);
  EXPECT_TRUE(std::filesystem::exists(dir_ / "relative.out"));
}

TEST_F(FileIoTest, ReadsFilesWhoseSizeIsUnknown) {
  std::string status = read_file("/proc/self/status");
  EXPECT_NE(status.find("Pid:"), std::string::npos);
}

TEST_F(FileIoTest, ErrorsNameThePathAndTheCause) {
  std::string missing = (dir_ / "missing").string();
  try {
    read_file(missing);
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_EQ(std::string(e.what()), missing + ": No such file or directory");
  }
  EXPECT_THROW(read_file(dir_.string()), FormatError);
  std::string in_missing_dir = (dir_ / "no" / "such" / "file").string();
  try {
    write_file_atomically(in_missing_dir, "x");
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(in_missing_dir + ": ", 0), 0u) << e.what();
  }
}

TEST_F(FileIoTest, AFailedWriteLeavesTheOldFileAsItWas) {
  std::string path = (dir_ / "keep.out").string();
  write_file_atomically(path, "good");
  // A file size limit makes the write fail part-way (EFBIG), as a full disk
  // would, even for root.
  struct rlimit old_limit;
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old_limit), 0);
  struct rlimit small = old_limit;
  small.rlim_cur = 3;
  auto old_handler = signal(SIGXFSZ, SIG_IGN);
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  bool threw = false;
  try {
    write_file_atomically(path, "replacement");
  } catch (const FormatError& e) {
    threw = true;
    EXPECT_NE(std::string(e.what()).find("File too large"), std::string::npos) << e.what();
  }
  setrlimit(RLIMIT_FSIZE, &old_limit);
  signal(SIGXFSZ, old_handler);
  EXPECT_TRUE(threw);
  EXPECT_EQ(read_file(path), "good");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_), std::filesystem::directory_iterator()), 1);
}

TEST_F(FileIoTest, WritingOverADirectoryFails) {
  std::filesystem::create_directory(dir_ / "sub");
  EXPECT_THROW(write_file_atomically((dir_ / "sub").string(), "x"), FormatError);
  EXPECT_TRUE(std::filesystem::is_directory(dir_ / "sub"));
}

// A FIFO (as /dev/null or a terminal: any existing file that is not a
// regular one) is written through, not replaced by a regular file renamed
// over it: as root, `profil report -o /dev/null` once left /dev/null a
// regular file.
TEST_F(FileIoTest, ANodeThatIsNotARegularFileIsWrittenThroughAndKept) {
  const std::string fifo = (dir_ / "fifo").string();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  // A reader is there first, so that the writer's open does not wait; the
  // bytes fit in the pipe's buffer.
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(reader, 0);
  write_file_atomically(fifo, "through the fifo\n");
  char buffer[64] = {};
  const ssize_t n = ::read(reader, buffer, sizeof buffer);
  ::close(reader);
  EXPECT_EQ(std::string(buffer, n > 0 ? static_cast<size_t>(n) : 0), "through the fifo\n");
  struct stat after {};
  ASSERT_EQ(::stat(fifo.c_str(), &after), 0);
  EXPECT_TRUE(S_ISFIFO(after.st_mode)) << "the fifo was replaced";
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_), std::filesystem::directory_iterator()), 1)
      << "a temporary was left";
}

}  // namespace
}  // namespace profiling::format
