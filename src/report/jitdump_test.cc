// jit-PID.dump files (jitdump.h): records as the specification lays them
// out (written here field by field, as V8 writes them), a record cut by a
// writer still at work, and the names and lines they give a profile's code
// (jit_map.h).
#include "report/jitdump.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "report/jit_map.h"

namespace profiling::report {
namespace {

// A jitdump built record by record (little-endian, this machine's order).
class JitdumpWriter {
 public:
  explicit JitdumpWriter(uint32_t pid) : pid_(pid) {
    put32(0x4A695444), put32(1), put32(40), put32(62 /* EM_X86_64 */), put32(0), put32(pid), put64(0), put64(0);
  }
  void load(uint64_t address, uint64_t size, uint64_t index, const std::string& name, int64_t time = 0) {
    const size_t at = head(0, time);
    put32(pid_), put32(pid_), put64(address), put64(address), put64(size), put64(index);
    bytes_ += name;
    bytes_ += '\0';
    bytes_.append(size, '\xcc');  // the code's bytes
    end(at);
  }
  void move(uint64_t from, uint64_t to, uint64_t size, uint64_t index) {
    const size_t at = head(1, 0);
    put32(pid_), put32(pid_), put64(to), put64(from), put64(to), put64(size), put64(index);
    end(at);
  }
  struct Line {
    uint64_t address;
    uint32_t line;
    std::string file;
  };
  // A file may hold NULs of its own: a name written from unfilled memory.
  void debug_info(uint64_t code, const std::vector<Line>& lines, size_t padding = 0) {
    const size_t at = head(2, 0);
    put64(code), put64(lines.size());
    for (const Line& l : lines) {
      put64(l.address + 64), put32(l.line), put32(0);  // as perf reads them, V8 writes them
      bytes_ += l.file;
      bytes_ += '\0';
    }
    bytes_.append(padding, '\0');
    end(at);
  }
  void unwinding_info() { end(head(4, 0)); }
  const std::string& bytes() const { return bytes_; }

 private:
  void put32(uint32_t v) { bytes_.append(reinterpret_cast<const char*>(&v), 4); }
  void put64(uint64_t v) { bytes_.append(reinterpret_cast<const char*>(&v), 8); }
  size_t head(uint32_t id, int64_t time) {
    const size_t at = bytes_.size();
    put32(id), put32(0), put64(static_cast<uint64_t>(time));
    return at;
  }
  void end(size_t at) {
    const auto size = static_cast<uint32_t>(bytes_.size() - at);
    std::memcpy(&bytes_[at + 4], &size, 4);
  }
  uint32_t pid_ = 0;
  std::string bytes_;
};

TEST(Jitdump, ReadsLoadsMovesAndLinesAsTheSpecificationLaysThemOut) {
  JitdumpWriter w(77);
  w.debug_info(0x5000, {{0x5020, 12, "/app/a.js"}, {0x5000, 10, "/app/a.js"}});
  w.load(0x5000, 0x40, 1, "JS:*a /app/a.js:10:1", 111);
  w.unwinding_info();
  w.load(0x6000, 0x40, 2, "JS:~b /app/b.js:1:1", 222);
  w.move(0x6000, 0x9000, 0x40, 2);
  Jitdump dump;
  std::string problem;
  ASSERT_TRUE(parse_jitdump(w.bytes(), &dump, &problem)) << problem;
  EXPECT_EQ(dump.pid, 77u);
  ASSERT_EQ(dump.codes.size(), 3u);
  EXPECT_EQ(dump.codes[0].start, 0x5000u);
  EXPECT_EQ(dump.codes[0].size, 0x40u);
  EXPECT_EQ(dump.codes[0].time_ns, 111);
  EXPECT_EQ(dump.codes[0].name, "JS:*a /app/a.js:10:1");
  ASSERT_EQ(dump.codes[0].lines.size(), 2u);
  EXPECT_EQ(dump.codes[0].lines[0].address, 0x5000u);  // sorted by address
  EXPECT_EQ(dump.codes[0].lines[1].line, 12u);
  EXPECT_EQ(dump.files.at(dump.codes[0].lines[1].file), "/app/a.js");
  EXPECT_TRUE(dump.codes[1].lines.empty());
  EXPECT_EQ(dump.codes[2].start, 0x9000u);  // moved: its load's name again
  EXPECT_EQ(dump.codes[2].name, "JS:~b /app/b.js:1:1");
}

TEST(Jitdump, ARecordCutAtTheEndIsLeftOutAndOtherFilesRefused) {
  JitdumpWriter w(5);
  w.load(0x1000, 0x10, 1, "whole");
  w.load(0x2000, 0x10, 2, "cut");
  Jitdump dump;
  std::string problem;
  ASSERT_TRUE(parse_jitdump(std::string_view(w.bytes()).substr(0, w.bytes().size() - 3), &dump, &problem));
  ASSERT_EQ(dump.codes.size(), 1u);
  EXPECT_EQ(dump.codes[0].name, "whole");
  EXPECT_FALSE(parse_jitdump("1000 10 a perf map\n", &dump, &problem));
  EXPECT_NE(problem.find("jitdump"), std::string::npos) << problem;
  std::string swapped = w.bytes();
  std::reverse(swapped.begin(), swapped.begin() + 4);
  EXPECT_FALSE(parse_jitdump(swapped, &dump, &problem));
  EXPECT_NE(problem.find("byte order"), std::string::npos) << problem;
}

TEST(Jitdump, DebugRecordsThatCannotBeTheCodesNameNoLine) {
  // node 20's V8 now and then writes debug records from memory it has not
  // filled: file names of control bytes or no UTF-8 (the record is left
  // out), entries shifted past the code by a stray NUL (left out).
  JitdumpWriter w(9);
  w.debug_info(0x1000, {{0x1000, 1, "\xf0\xc9\x03"}, {0x1010, 2, "/app/a.js"}});
  w.load(0x1000, 0x40, 1, "JS:^a /app/a.js:1:1");
  w.debug_info(0x1000, {{0x1000, 1, "/app/\xa1\xf6.js"}});
  w.load(0x1000, 0x40, 4, "JS:^a /app/a.js:1:1");
  w.debug_info(0x2000, {{0x2000, 3, "/app/b.js"}, {0x9000000000002000, 4, "/app/b.js"}});
  w.load(0x2000, 0x40, 2, "JS:^b /app/b.js:3:1");
  w.debug_info(0x3000, {{0x3000, 5, "/app/c.js"}}, 7);  // padded to 8 bytes, as V8 does
  w.load(0x3000, 0x40, 3, "JS:*c /app/c.js:5:1");
  w.debug_info(0x4000, {{0x4000, 7, "/app/d\xc3\xa9j\xc3\xa0.js"}});  // UTF-8 is a name
  w.load(0x4000, 0x40, 5, "JS:*d");
  Jitdump dump;
  std::string problem;
  ASSERT_TRUE(parse_jitdump(w.bytes(), &dump, &problem)) << problem;
  ASSERT_EQ(dump.codes.size(), 5u);
  EXPECT_EQ(dump.codes[0].name, "JS:^a /app/a.js:1:1");  // named all the same
  EXPECT_TRUE(dump.codes[0].lines.empty());
  EXPECT_TRUE(dump.codes[1].lines.empty());
  ASSERT_EQ(dump.codes[2].lines.size(), 1u);  // b.js:3, the entry before the one past the code
  EXPECT_EQ(dump.codes[2].lines[0].line, 3u);
  ASSERT_EQ(dump.codes[3].lines.size(), 1u);
  ASSERT_EQ(dump.codes[4].lines.size(), 1u);
  EXPECT_EQ(dump.files.at(dump.codes[4].lines[0].file), "/app/d\xc3\xa9j\xc3\xa0.js");
  EXPECT_EQ(dump.files.size(), 3u);  // b.js, c.js, déjà.js: no damaged name kept
}

TEST(Jitdump, ARecordWhoseEntriesDoNotEndWhereItDoesGivesNoLine) {
  // The CI run of 9c6448b: hotLoop's file read as '%~', printable and
  // UTF-8. V8 had written the name's bytes with a NUL among them; every
  // entry after it was read from the wrong bytes, and the record had bytes
  // left over that padding never holds.
  const std::string hot(std::string("%~\0\x91\x13", 5) + std::string(16, 'x'));
  JitdumpWriter w(9);
  w.debug_info(0x1000, {{0x1000, 6, hot}, {0x1010, 6, hot}, {0x1020, 7, hot}});
  w.load(0x1000, 0x40, 1, "JS:*hotLoop /app/hot.js:4:17");
  w.debug_info(0x2000, {{0x2000, 6, "/app/hot.js"}}, 3);
  w.load(0x2000, 0x40, 2, "JS:*hotLoop /app/hot.js:4:17");
  w.debug_info(0x3000, {{0x3000, 6, "/app/hot.js"}}, 8);  // more than padding
  w.load(0x3000, 0x40, 3, "JS:*hotLoop /app/hot.js:4:17");
  Jitdump dump;
  std::string problem;
  ASSERT_TRUE(parse_jitdump(w.bytes(), &dump, &problem)) << problem;
  ASSERT_EQ(dump.codes.size(), 3u);
  EXPECT_TRUE(dump.codes[0].lines.empty());
  ASSERT_EQ(dump.codes[1].lines.size(), 1u);
  EXPECT_EQ(dump.codes[1].lines[0].line, 6u);
  EXPECT_TRUE(dump.codes[2].lines.empty());
  ASSERT_EQ(dump.files.size(), 1u);
  EXPECT_EQ(dump.files[0], "/app/hot.js");
}

TEST(Jitdump, CodeHasItsSourceLinesInTheMap) {
  JitdumpWriter w(77);
  w.debug_info(0x5000, {{0x5000, 10, "/app/a.js"}, {0x5020, 12, "/app/a.js"}});
  w.load(0x5000, 0x40, 1, "JS:*a /app/a.js:10:1");
  w.load(0x6000, 0x40, 2, "JS:~b /app/b.js:1:1");
  Jitdump dump;
  std::string problem;
  ASSERT_TRUE(parse_jitdump(w.bytes(), &dump, &problem)) << problem;
  JitMap map;
  map.add_jitdump(std::move(dump));
  const std::optional<format::Frame> a = map.lookup(0x5024);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->function, "JS:*a /app/a.js:10:1");
  EXPECT_EQ(a->file, "/app/a.js");
  EXPECT_EQ(a->line, 12);
  EXPECT_EQ(map.lookup(0x501f)->line, 10);
  EXPECT_EQ(map.lookup(0x6000)->line, 0);  // no debug info
  EXPECT_EQ(map.lookup(0x6000)->function, "JS:~b /app/b.js:1:1");
}

class JitdumpDir : public ::testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/tmp/jitdump_test.XXXXXX";
    ASSERT_NE(mkdtemp(name), nullptr);
    dir_ = name;
    std::filesystem::create_directory(dir_ + "/cwd");
    std::filesystem::create_directory(dir_ + "/out");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(JitdumpDir, AJitdumpFoundByItsMappingIsKeptAndNamesTheProfile) {
  // V8 writes jit-PID.dump in the program's working directory and maps it:
  // the profile's mapping says where; keep_jit_map copies it beside the
  // profiles, whose code it then names with lines. A reused address is
  // named by both of its codes.
  const int64_t pid = 0x7ffffff0 - getpid();
  JitdumpWriter w(static_cast<uint32_t>(pid));
  w.debug_info(0x7f0000001000, {{0x7f0000001000, 3, "/app/hot.js"}});
  w.load(0x7f0000001000, 0x100, 1, "JS:*hot /app/hot.js:3:1");
  w.load(0x7f0000002000, 0x100, 2, "JS:~cold /app/hot.js:9:1");
  w.load(0x7f0000002000, 0x80, 3, "JS:*later /app/hot.js:20:1");
  const std::string where = dir_ + "/cwd/" + jitdump_name(pid);
  std::ofstream(where) << w.bytes();
  format::Profile p;
  p.pid = pid;
  p.time_nanos = (static_cast<int64_t>(time(nullptr)) - 60) * 1'000'000'000;
  p.mappings = {{0x7f0000000000, 0x7f0000100000, 0, "[anon]", ""}, {0x7f0000200000, 0x7f0000201000, 0, where, ""}};
  p.samples = {{0x7f0000001010, 5, 0, 0}, {0x7f0000002010, 2, 0, 0}, {0x7f0000002090, 1, 0, 0}};
  std::string problem;
  ASSERT_TRUE(keep_jit_map(p, dir_ + "/out", &problem)) << problem;
  ASSERT_TRUE(std::filesystem::exists(dir_ + "/out/" + jitdump_name(pid)));
  std::filesystem::remove(where);
  size_t ambiguous = 0;
  EXPECT_EQ(name_jit_code(&p, {dir_ + "/out"}, &ambiguous), 3u);
  EXPECT_EQ(ambiguous, 1u);
  EXPECT_EQ(p.frames.at(0x7f0000001010).front().function, "JS:*hot /app/hot.js:3:1");
  EXPECT_EQ(p.frames.at(0x7f0000001010).front().line, 3);
  EXPECT_EQ(p.frames.at(0x7f0000002010).front().function, "JS:~cold /app/hot.js:9:1 | JS:*later /app/hot.js:20:1");
  EXPECT_EQ(p.frames.at(0x7f0000002090).front().function, "JS:~cold /app/hot.js:9:1");
}

TEST_F(JitdumpDir, AnotherProcessesJitdumpIsNotKept) {
  // The header names another pid, or the file is older than the process.
  const int64_t pid = 0x7ffffff0 - getpid();
  JitdumpWriter other(static_cast<uint32_t>(pid + 1));
  other.load(0x1000, 0x10, 1, "other");
  const std::string where = dir_ + "/cwd/" + jitdump_name(pid);
  std::ofstream(where) << other.bytes();
  format::Profile p;
  p.pid = pid;
  p.mappings = {{0x1000, 0x2000, 0, "", ""}, {0x3000, 0x4000, 0, where, ""}};
  p.samples = {{0x1000, 1, 0, 0}};
  std::string problem;
  ASSERT_TRUE(keep_jit_map(p, dir_ + "/out", &problem)) << problem;
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/out/" + jitdump_name(pid)));
  JitdumpWriter mine(static_cast<uint32_t>(pid));
  mine.load(0x1000, 0x10, 1, "mine");
  std::ofstream(where) << mine.bytes();
  p.time_nanos = (static_cast<int64_t>(time(nullptr)) + 3600) * 1'000'000'000;  // began after it was written
  ASSERT_TRUE(keep_jit_map(p, dir_ + "/out", &problem)) << problem;
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/out/" + jitdump_name(pid)));
}

}  // namespace
}  // namespace profiling::report
