// perf-PID.map and jit-PID.dump files (jit_map.h): parsing as perf does,
// code written over other code named by both, and the names given to a
// profile's anonymous code.
#include "report/jit_map.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <chrono>
#include <fstream>
#include <iterator>

namespace profiling::report {
namespace {

// The function of the frame at address, "" when none.
std::string name_at(const JitMap& map, uint64_t address, bool* ambiguous = nullptr) {
  const std::optional<format::Frame> frame = map.lookup(address, ambiguous);
  return frame ? frame->function : "";
}

TEST(JitMap, ParsesLinesAsV8AndPerfWriteThem) {
  // V8 (--perf-basic-prof) writes hex without 0x; perf-map-agent and the
  // JVM with it; names run to the end of the line, spaces and all.
  JitMap map(
      "3a5c0e8040 4c JS:*hotLoop /tmp/hot.js:3:17\n"
      "0x3a5c0e8100 0x20 py::work:/tmp/w.py\n"
      "garbage\n"
      "3a5c0e9000 0 empty range\n"
      "3a5c0e9000 zz not hex\n"
      "3a5c0ea000 10 crlf\r\n");
  EXPECT_EQ(map.size(), 3u);
  EXPECT_EQ(name_at(map, 0x3a5c0e8040), "JS:*hotLoop /tmp/hot.js:3:17");
  EXPECT_EQ(name_at(map, 0x3a5c0e8040 + 0x4b), "JS:*hotLoop /tmp/hot.js:3:17");
  EXPECT_EQ(name_at(map, 0x3a5c0e8040 + 0x4c), "");
  EXPECT_EQ(name_at(map, 0x3a5c0e803f), "");
  EXPECT_EQ(name_at(map, 0x3a5c0e811f), "py::work:/tmp/w.py");
  EXPECT_EQ(name_at(map, 0x3a5c0ea000), "crlf");
}

TEST(JitMap, CodeWrittenOverOtherCodeIsNamedByBoth) {
  // The JIT freed "old" and put "new" in part of its memory: without the
  // samples' times a sample there may be either (issue 34), so neither the
  // earlier nor the later name alone; a long entry that starts far before
  // an address still covers it.
  JitMap map("800 1000 outer\n1000 100 old\n1040 10 new\n");
  bool ambiguous = false;
  EXPECT_EQ(name_at(map, 0x1045, &ambiguous), "outer | old | new");
  EXPECT_TRUE(ambiguous);
  EXPECT_EQ(name_at(map, 0x1050, &ambiguous), "outer | old");
  EXPECT_EQ(name_at(map, 0x1200, &ambiguous), "outer");
  EXPECT_FALSE(ambiguous);
  EXPECT_EQ(name_at(map, 0x1800), "");
  // The same code written twice (a JVM asked twice) is one name.
  JitMap twice("1000 100 int Hot.loop(int)\n2000 10 stub\n1000 100 int Hot.loop(int)\n");
  EXPECT_EQ(name_at(twice, 0x1010, &ambiguous), "int Hot.loop(int)");
  EXPECT_FALSE(ambiguous);
}

TEST(JitMap, AnonymousCodeIsRecognised) {
  for (const char* path : {"", "[anon]", "//anon", "[anon:v8]", "[jit]"}) EXPECT_TRUE(is_anonymous_code(path)) << path;
  for (const char* path : {"[vdso]", "/usr/bin/node", "[heap]"}) EXPECT_FALSE(is_anonymous_code(path)) << path;
}

class JitDir : public ::testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/tmp/jit_map_test.XXXXXX";
    ASSERT_NE(mkdtemp(name), nullptr);
    dir_ = name;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void write(int64_t pid, const std::string& text) { std::ofstream(dir_ + "/" + jit_map_name(pid)) << text; }
  std::string dir_;
};

TEST_F(JitDir, NamesSamplesAndCallersInAnonymousCodeOfTheirProcess) {
  write(41, "7f0000001000 100 JS:*hot\n7f0000002000 100 JS:~caller\n");
  write(42, "7f0000001000 100 JS:*other\n");
  format::Profile p;
  p.pid = 41;
  p.mappings = {{0x400000, 0x500000, 0, "/usr/bin/node", ""}, {0x7f0000000000, 0x7f0000100000, 0, "[anon]", ""}};
  const uint64_t hot = 0x7f0000001010, caller = 0x7f0000002020, other = 0x7f0000001020, unlisted = 0x7f0000005000;
  p.stacks.intern(std::vector<uint64_t>{caller, 0x400100}, false);
  p.samples = {{0x400010, 1, 0, 0}, {hot, 5, 0, 1}, {other, 2, 42, 0}, {unlisted, 1, 0, 0}};
  EXPECT_EQ(name_jit_code(&p, {dir_}), 3u);
  EXPECT_EQ(p.frames.at(hot).front().function, "JS:*hot");
  EXPECT_EQ(p.frames.at(caller).front().function, "JS:~caller");
  EXPECT_EQ(p.frames.at(other).front().function, "JS:*other");  // pid 42's map
  EXPECT_EQ(p.frames.count(unlisted), 0u);
  EXPECT_EQ(p.frames.count(0x400010), 0u);  // a file's code is the symbolizer's
  EXPECT_EQ(p.mappings[1].path, kJitObject);
  EXPECT_EQ(p.mappings[0].path, "/usr/bin/node");
  // Again (a report of a profile the run named): nothing more to name.
  EXPECT_EQ(name_jit_code(&p, {dir_}), 0u);
}

TEST_F(JitDir, CodeUnmappedBeforeTheMapsWereReadGetsJitMappings) {
  // node frees its code space before exit, where the preload copies its
  // maps: the samples are in no mapping. Each named run of them between two
  // mappings becomes one [jit] mapping.
  write(7, "7f0000001000 100 JS:*a\n7f0000003000 100 JS:*b\n7f0000009000 100 JS:*c\n");
  format::Profile p;
  p.pid = 7;
  p.mappings = {{0x7f0000005000, 0x7f0000006000, 0, "/lib/x.so", ""}};
  p.samples = {{0x7f0000001000, 1, 0, 0}, {0x7f0000003010, 1, 0, 0}, {0x7f0000009000, 1, 0, 0},
               {0x7f000000a000, 1, 0, 0}, {format::kKernelAddress, 1, 0, 0}};
  EXPECT_EQ(name_jit_code(&p, {dir_}), 3u);
  ASSERT_EQ(p.mappings.size(), 3u);
  EXPECT_EQ(p.mappings[1], (format::Mapping{0x7f0000001000, 0x7f0000003011, 0, kJitObject, ""}));
  EXPECT_EQ(p.mappings[2], (format::Mapping{0x7f0000009000, 0x7f0000009001, 0, kJitObject, ""}));
  EXPECT_EQ(p.frames.at(0x7f0000003010).front().function, "JS:*b");
  EXPECT_EQ(p.frames.count(0x7f000000a000), 0u);
}

TEST_F(JitDir, AMapInTmpOlderThanTheProfileIsAnotherProcesses) {
  const int64_t pid = 0x7ffffff0 - getpid();  // not a running pid's map
  const std::string path = "/tmp/" + jit_map_name(pid);
  std::ofstream(path) << "1000 100 stale\n";
  format::Profile p;
  p.pid = pid;
  p.mappings = {{0x1000, 0x2000, 0, "", ""}};
  p.samples = {{0x1010, 1, 0, 0}};
  const int64_t hour_later = (static_cast<int64_t>(time(nullptr)) + 3600) * 1'000'000'000;
  const int64_t hour_ago = (static_cast<int64_t>(time(nullptr)) - 3600) * 1'000'000'000;
  p.time_nanos = hour_later;  // began after it was written
  EXPECT_EQ(name_jit_code(&p, {"/tmp"}), 0u);
  // Nor is it kept beside a run's profiles (a CI run once found another
  // process's map in its output: the pid had been reused).
  std::string problem;
  EXPECT_TRUE(keep_jit_map(p, dir_, &problem)) << problem;
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/" + jit_map_name(pid)));
  // An attach, or a later snapshot: the profile began after the map was
  // last written, the process before.
  p.process_start_ns = hour_ago;
  EXPECT_EQ(name_jit_code(&p, {"/tmp"}), 1u);
  EXPECT_EQ(p.frames.at(0x1010).front().function, "stale");
  p.frames.clear();
  p.process_start_ns = 0;
  p.time_nanos = hour_ago;
  EXPECT_EQ(name_jit_code(&p, {"/tmp"}), 1u);
  // keep_jit_map copies it whole into a run's directory.
  EXPECT_TRUE(keep_jit_map(p, dir_, &problem)) << problem;
  std::ifstream copy(dir_ + "/" + jit_map_name(pid));
  std::string line;
  EXPECT_TRUE(std::getline(copy, line));
  EXPECT_EQ(line, "1000 100 stale");
  std::filesystem::remove(path);
  EXPECT_TRUE(keep_jit_map(p, dir_ + "/none", &problem));  // no map: nothing to do
}

TEST_F(JitDir, AJvmAskedTwiceKeepsTheCodeOfBothAsks) {
  // A JVM writes the code it holds at each ask over /tmp's map; the copy
  // in the run's directory keeps every ask's lines, so code freed between
  // two asks stays named, and memory it reused is named by both.
  const int64_t pid = 0x7ffffff0 - getpid();
  const std::string tmp = "/tmp/" + jit_map_name(pid), kept = dir_ + "/" + jit_map_name(pid);
  const int64_t began = (static_cast<int64_t>(time(nullptr)) - 60) * 1'000'000'000;
  std::ofstream(kept) << "1000 10 left by an earlier process of this pid\n";
  std::filesystem::last_write_time(kept, std::filesystem::file_time_type::clock::now() - std::chrono::hours(1));
  std::ofstream(tmp) << "1000 100 int A.f()\n2000 100 Interpreter\n";
  std::string problem;
  ASSERT_TRUE(merge_jit_map(pid, began, dir_, &problem)) << problem;
  std::ofstream(tmp) << "2000 100 Interpreter\n1000 80 int B.g()\n";
  ASSERT_TRUE(merge_jit_map(pid, began, dir_, &problem)) << problem;
  std::filesystem::remove(tmp);
  std::ifstream in(kept);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "1000 100 int A.f()\n2000 100 Interpreter\n1000 80 int B.g()\n");
  format::Profile p;
  p.pid = pid;
  p.time_nanos = began;
  p.mappings = {{0x1000, 0x3000, 0, "", ""}};
  p.samples = {{0x1010, 1, 0, 0}, {0x1090, 1, 0, 0}, {0x2000, 1, 0, 0}};
  size_t ambiguous = 0;
  EXPECT_EQ(name_jit_code(&p, {dir_}, &ambiguous), 3u);
  EXPECT_EQ(ambiguous, 1u);
  EXPECT_EQ(p.frames.at(0x1010).front().function, "int A.f() | int B.g()");
  EXPECT_EQ(p.frames.at(0x1090).front().function, "int A.f()");
  EXPECT_EQ(p.frames.at(0x2000).front().function, "Interpreter");
}

}  // namespace
}  // namespace profiling::report
