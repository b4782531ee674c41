// The async-signal-safe writer against the reader: what write_profraw puts
// in a file is what read_profraw takes out.
#include "runtime/profraw_writer.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <thread>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "format/profraw.h"
#include "sampler/thread_names.h"

namespace profiling::runtime {
namespace {

namespace fs = std::filesystem;

// Each test writes into a directory of its own from a pc table of its own,
// both gone after it however it ends.
class ProfrawWriter : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/profraw-writer-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir = pattern;
    table = sampler::PcTable::create(64);
    ASSERT_NE(table, nullptr);
  }
  void TearDown() override {
    if (table != nullptr) sampler::PcTable::destroy(table);
    if (!dir.empty()) fs::remove_all(dir);
  }
  fs::path dir;
  sampler::PcTable* table = nullptr;
};

TEST_F(ProfrawWriter, WritesWhatTheReaderReads) {
  const uint64_t here = reinterpret_cast<uint64_t>(&write_profraw);
  table->add(here, 5);
  table->add(here + 16, 2);
  table->add(here, 1);

  ProfrawInfo info;
  info.clock = 1;
  info.hz = 4000;
  info.start_ns = 123;
  info.end_reason = format::profraw::EndReason::quick;
  info.signals = 8;
  info.run_id = "the-run";
  ASSERT_TRUE(write_profraw(dir.c_str(), "x.1.profraw", info, *table));
  // Owner-only: a dump holds the process's address layout (issue 11).
  EXPECT_EQ(fs::status(dir / "x.1.profraw").permissions() & fs::perms::mask, fs::perms::owner_read | fs::perms::owner_write);
  std::ifstream in(dir / "x.1.profraw", std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const format::ProfrawData data = format::read_profraw(ss.str());
  EXPECT_EQ(data.profile.pid, getpid());
  EXPECT_EQ(data.profile.clock, "perf");
  EXPECT_EQ(data.hz, 4000u);
  EXPECT_EQ(data.profile.period_ns, 250'000u);
  EXPECT_EQ(data.end_reason, format::profraw::EndReason::quick);
  EXPECT_EQ(data.run_id, "the-run");
  EXPECT_EQ(data.signals, 8u);
  EXPECT_GT(data.cpu_ns, 0u);
  EXPECT_EQ(data.profile.program, fs::read_symlink("/proc/self/exe").string());
  ASSERT_EQ(data.profile.samples.size(), 2u);
  EXPECT_EQ(data.profile.samples[0].count, 6u);
  EXPECT_EQ(data.profile.samples[1].count, 2u);
  // The maps were read at dump time: this test's own code is in them.
  const format::Mapping* mapping = data.profile.mapping_for(here);
  ASSERT_NE(mapping, nullptr);
  EXPECT_EQ(mapping->path, data.profile.program);
  EXPECT_EQ(&data.profile.mappings.front(), mapping);
  // No temporary is left.
  int files = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir)) ++files;
  EXPECT_EQ(files, 1);

  // An unwritable directory: false with errno, and no file.
  EXPECT_FALSE(write_profraw((dir / "missing").c_str(), "y.profraw", info, *table));
  EXPECT_EQ(errno, ENOENT);
}

// A first dump is written into its empty placeholder, the temporary the
// runtime created at start, and renamed from it (the same inode: none
// created, none freed); without a placeholder it is written the usual way.
// A dump that fails leaves the placeholder there, empty.
TEST_F(ProfrawWriter, FirstDumpIsWrittenInItsPlaceholder) {
  table->add(0x401000, 3);
  ProfrawInfo info;
  info.hz = 500;
  info.run_id = "the-run";
  const fs::path placeholder = dir / ("x.1.profraw.tmp." + std::to_string(::getpid()));
  const int fd = ::open(placeholder.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  ASSERT_GE(fd, 0);
  struct stat before {};
  ASSERT_EQ(::fstat(fd, &before), 0);
  ::close(fd);

  ASSERT_TRUE(write_profraw(dir.c_str(), "x.1.profraw", info, *table, /*in_place=*/true));
  struct stat after {};
  ASSERT_EQ(::stat((dir / "x.1.profraw").c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino) << "a new temporary, not the placeholder";
  EXPECT_FALSE(fs::exists(placeholder));
  auto read = [](const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return format::read_profraw(ss.str());
  };
  const format::ProfrawData data = read(dir / "x.1.profraw");
  ASSERT_EQ(data.profile.samples.size(), 1u);
  EXPECT_EQ(data.profile.samples[0].count, 3u);
  EXPECT_EQ(data.run_id, "the-run");

  ASSERT_TRUE(write_profraw(dir.c_str(), "y.1.profraw", info, *table, /*in_place=*/true));
  EXPECT_EQ(read(dir / "y.1.profraw").profile.samples.size(), 1u);
  int files = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir)) ++files;
  EXPECT_EQ(files, 2);

  // A dump that cannot be renamed into place (a directory holds its name)
  // fails and leaves its placeholder, emptied.
  const fs::path blocked = dir / ("z.1.profraw.tmp." + std::to_string(::getpid()));
  ::close(::open(blocked.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600));
  fs::create_directory(dir / "z.1.profraw");
  fs::create_directory(dir / "z.1.profraw" / "occupied");
  EXPECT_FALSE(write_profraw(dir.c_str(), "z.1.profraw", info, *table, /*in_place=*/true));
  ASSERT_TRUE(fs::exists(blocked)) << "the placeholder stays";
  EXPECT_EQ(fs::file_size(blocked), 0u);
}

// Stacks built in the test, as the stack table will hand them over.
class TestStacks final : public StackSource {
 public:
  struct Stack {
    std::vector<uint64_t> pcs;
    bool truncated;
    uint64_t weight;
    int32_t tid = 0;
    uint32_t observations = 1;
    uint8_t gil = format::kGilUnknown;
  };
  std::vector<Stack> stacks;
  uint64_t dropped = 0;
  void for_each_stack(StackVisitor& visitor) const override {
    for (const Stack& s : stacks)
      visitor.visit(s.pcs.data(), static_cast<uint32_t>(s.pcs.size()), s.truncated, s.weight, s.tid, s.observations,
                    s.gil);
  }
  uint64_t dropped_stacks() const override { return dropped; }
};

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST_F(ProfrawWriter, WritesStacksTheReaderSpreadsOverThePcs) {
  const uint64_t leaf = reinterpret_cast<uint64_t>(&write_profraw) + 4, other = leaf + 32;
  table->add(leaf, 9);
  table->add(other, 3);
  TestStacks stacks;
  stacks.stacks.push_back({{leaf, 0x401000, 0x400800}, false, 5});
  stacks.stacks.push_back({{leaf, 0x401100}, true, 3});  // an unwind that failed after one caller
  stacks.stacks.push_back({{other}, true, 3});            // failed at once: the leaf alone
  // Deeper than any file may hold: cut at the limit, marked truncated.
  std::vector<uint64_t> deep(format::profraw::kMaxStackDepth + 10, 0x402000);
  deep[0] = leaf;
  stacks.stacks.push_back({deep, false, 1});
  // More than fills the writer's 4 KiB buffer many times over.
  for (uint64_t i = 0; i < 300; ++i) stacks.stacks.push_back({{other + 1, 0x500000 + i, 0x400800}, false, 2});
  stacks.dropped = 7;

  ProfrawInfo info;
  info.clock = 0;
  info.hz = 1000;
  info.stacks = &stacks;
  info.max_depth = 128;
  ASSERT_TRUE(write_profraw(dir.c_str(), "s.1.profraw", info, *table));
  const format::ProfrawData data = format::read_profraw(read_all(dir / "s.1.profraw"));
  const format::Profile& p = data.profile;
  EXPECT_TRUE(data.stacks_captured);
  EXPECT_EQ(data.max_depth, 128u);
  EXPECT_EQ(p.stacks_dropped, 7u);
  // leaf: 9 in the pc table = 5 + 3 + 1; other: 3 = 3; other + 1: only in
  // stacks (600).
  EXPECT_EQ(p.total_count(), 9u + 3u + 600u);
  uint64_t full = 0, truncated = 0, deepest = 0;
  for (const format::Sample& s : p.samples) {
    const auto callers = p.stacks.callers(s.stack);
    deepest = std::max<uint64_t>(deepest, callers.size() + 1);
    (p.stacks.truncated(s.stack) ? truncated : full) += s.count;
    if (s.address == leaf && callers.size() == 2) {
      EXPECT_EQ(callers[0], 0x401000u - 1);
      EXPECT_EQ(callers[1], 0x400800u - 1);
      EXPECT_EQ(s.count, 5u);
    }
    if (s.address == other) {
      EXPECT_TRUE(callers.empty());
      EXPECT_TRUE(p.stacks.truncated(s.stack));
    }
  }
  EXPECT_EQ(deepest, format::profraw::kMaxStackDepth);
  EXPECT_EQ(truncated, 3u + 3u + 1u);
  EXPECT_EQ(full, 5u + 600u);
  EXPECT_EQ(p.stacks.size(), 4u + 300u);
  for (const format::Sample& s : p.samples) EXPECT_EQ(s.gil, format::kGilUnknown);

  // Stacks off: the dump says so, and every sample is a leaf alone.
  info.stacks = nullptr;
  ASSERT_TRUE(write_profraw(dir.c_str(), "s.2.profraw", info, *table));
  const format::ProfrawData flat = format::read_profraw(read_all(dir / "s.2.profraw"));
  EXPECT_FALSE(flat.stacks_captured);
  EXPECT_FALSE(flat.profile.has_stacks());
  EXPECT_EQ(flat.profile.total_count(), 12u);
}

// Each stack keeps its thread, and each thread is named once: a live one
// by its comm, one that ended by the name it ended with, one that ended
// unseen as ended (profraw version 4).
TEST_F(ProfrawWriter, NamesTheThreadsOfTheStacks) {
  const uint64_t leaf = reinterpret_cast<uint64_t>(&write_profraw) + 4;
  table->add(leaf, 9);
  // A thread that renames itself, then ends: the runtime keeps its name.
  pid_t ended = 0;
  std::thread([&] {
    pthread_setname_np(pthread_self(), "done-worker");
    ended = static_cast<pid_t>(::syscall(SYS_gettid));
    sampler::remember_ending_thread_name();
  }).join();
  pthread_setname_np(pthread_self(), "writer-main");
  const auto self = static_cast<int32_t>(::syscall(SYS_gettid));
  TestStacks stacks;
  stacks.stacks.push_back({{leaf, 0x401000}, false, 4, self});
  stacks.stacks.push_back({{leaf, 0x401000}, false, 3, ended});
  stacks.stacks.push_back({{leaf, 0x401000}, false, 2, 0x3ffffe});  // no such thread, never seen ending
  ProfrawInfo info;
  info.hz = 1000;
  info.stacks = &stacks;
  ASSERT_TRUE(write_profraw(dir.c_str(), "t.1.profraw", info, *table));
  const format::Profile p = format::read_profraw(read_all(dir / "t.1.profraw")).profile;
  std::map<int32_t, uint64_t> by_thread;
  for (const format::Sample& s : p.samples) by_thread[s.tid] += s.count;
  EXPECT_EQ(by_thread, (std::map<int32_t, uint64_t>{{0x3ffffe, 2}, {ended, 3}, {self, 4}}));
  EXPECT_EQ(p.thread_names, (std::map<int32_t, std::string>{
                                {self, "writer-main"}, {ended, "done-worker"}, {0x3ffffe, format::profraw::kEndedThreadName}}));
}

// Each pc and each stack keeps its observations beside its weighted count
// (profraw version 5, issue 22): three signals of 16 periods are a count
// of 48 in 3 draws; what the pc table has beyond the stacks keeps the
// rest of the observations.
TEST_F(ProfrawWriter, KeepsTheObservationsBesideTheWeightedCounts) {
  const uint64_t leaf = reinterpret_cast<uint64_t>(&write_profraw) + 4, other = leaf + 32;
  for (int i = 0; i < 3; ++i) table->add(leaf, 16);
  for (int i = 0; i < 5; ++i) table->add(other, 1);
  TestStacks stacks;
  stacks.stacks.push_back({{leaf, 0x401000}, false, 32, 7, 2});  // two of leaf's three signals
  ProfrawInfo info;
  info.clock = 0;
  info.hz = 4000;
  info.stacks = &stacks;
  ASSERT_TRUE(write_profraw(dir.c_str(), "o.1.profraw", info, *table));
  const format::Profile p = format::read_profraw(read_all(dir / "o.1.profraw")).profile;
  EXPECT_TRUE(p.has_observations);
  EXPECT_EQ(p.total_count(), 48u + 5u);
  EXPECT_EQ(p.total_observations(), 3u + 5u);
  std::map<std::pair<uint64_t, bool>, std::pair<uint64_t, uint64_t>> got;  // (pc, has callers) -> (count, observations)
  for (const format::Sample& s : p.samples) {
    auto& [count, observations] = got[{s.address, !p.stacks.callers(s.stack).empty()}];
    count += s.count;
    observations += s.observations;
  }
  EXPECT_EQ(got[std::make_pair(leaf, true)], std::make_pair(uint64_t{32}, uint64_t{2}));
  EXPECT_EQ(got[std::make_pair(leaf, false)], std::make_pair(uint64_t{16}, uint64_t{1}));
  EXPECT_EQ(got[std::make_pair(other, false)], std::make_pair(uint64_t{5}, uint64_t{5}));
}

// Issue 31, inside: whether the thread held the GIL goes into the stack
// record's flags (version 7) and comes back as each sample's gil, the
// same stack held and released two samples.
TEST_F(ProfrawWriter, KeepsWhetherTheGilWasHeld) {
  const uint64_t leaf = reinterpret_cast<uint64_t>(&write_profraw) + 4;
  table->add(leaf, 10);
  TestStacks stacks;
  stacks.stacks.push_back({{leaf, 0x401000}, false, 6, 7, 6, format::kGilHeld});
  stacks.stacks.push_back({{leaf, 0x401000}, true, 3, 7, 3, format::kGilReleased});
  stacks.stacks.push_back({{leaf, 0x401000}, false, 1, 7, 1, format::kGilUnknown});
  ProfrawInfo info;
  info.clock = 3;
  info.hz = 1000;
  info.stacks = &stacks;
  ASSERT_TRUE(write_profraw(dir.c_str(), "g.1.profraw", info, *table));
  const format::Profile p = format::read_profraw(read_all(dir / "g.1.profraw")).profile;
  std::map<uint8_t, std::pair<uint64_t, bool>> by_gil;  // gil -> (count, truncated)
  for (const format::Sample& s : p.samples) by_gil[s.gil] = {s.count, p.stacks.truncated(s.stack)};
  EXPECT_EQ(by_gil, (std::map<uint8_t, std::pair<uint64_t, bool>>{{format::kGilUnknown, {1, false}},
                                                                   {format::kGilHeld, {6, false}},
                                                                   {format::kGilReleased, {3, true}}}));
}

}  // namespace
}  // namespace profiling::runtime

namespace profiling::runtime {
namespace {

class TestNames final : public InterpreterFrameSource {
 public:
  void for_each_frame(InterpreterFrameVisitor& visitor) const override {
    visitor.frame(format::kInterpreterFrameBase, 0, "[mark]", 6, "", 0);
    visitor.frame(format::kInterpreterFrameBase + 1, 12, "Parser.parse", 12, "parse.py", 8);
    visitor.frame(format::kInterpreterFrameBase + 2, 3, "main", 4, "/srv/app/main.py", 16);  // no padding
  }
};

// Issue 31, inside: stacks holding interpreter frames (merged at the dump),
// one of them as the leaf, and their names after the threads. The pc
// table's count of the sampled pc is its stacks', whatever leads them.
TEST_F(ProfrawWriter, WritesInterpreterFramesAndTheirNames) {
  const uint64_t loop = reinterpret_cast<uint64_t>(&write_profraw) + 8;
  const uint64_t parse = format::kInterpreterFrameBase + 1, main = format::kInterpreterFrameBase + 2;
  table->add(loop, 7);
  TestStacks stacks;
  stacks.stacks.push_back({{parse, loop, main, loop + 64, 0x400800}, false, 4});  // the loop's own code
  stacks.stacks.push_back({{loop, main, loop + 64, 0x400800}, false, 3});          // entering a call: bare
  TestNames names;
  ProfrawInfo info;
  info.clock = 3;
  info.hz = 1000;
  info.stacks = &stacks;
  info.interpreter_frames = &names;
  ASSERT_TRUE(write_profraw(dir.c_str(), "i.1.profraw", info, *table));
  const format::ProfrawData data = format::read_profraw(read_all(dir / "i.1.profraw"));
  const format::Profile& p = data.profile;
  EXPECT_TRUE(data.interpreter_frames);
  EXPECT_EQ(p.total_count(), 7u);  // 4 + 3, nothing of unknown callers
  ASSERT_EQ(p.frames.count(parse), 1u);
  EXPECT_EQ(p.frames.at(parse)[0].function, "Parser.parse");
  EXPECT_EQ(p.frames.at(parse)[0].file, "parse.py");
  EXPECT_EQ(p.frames.at(parse)[0].line, 12);
  EXPECT_EQ(p.frames.at(main)[0].file, "/srv/app/main.py");
  EXPECT_EQ(p.frames.at(format::kInterpreterFrameBase)[0].function, "[mark]");
  for (const format::Sample& s : p.samples) {
    const auto callers = p.stacks.callers(s.stack);
    if (s.address == parse) {
      EXPECT_EQ(s.count, 4u);
      ASSERT_EQ(callers.size(), 4u);
      EXPECT_EQ(callers[1], main);  // a name, not a return address: kept as it is
      EXPECT_EQ(callers[2], loop + 63);
    } else {
      EXPECT_EQ(s.address, loop);
      EXPECT_EQ(s.count, 3u);
      EXPECT_FALSE(p.stacks.truncated(s.stack));
    }
  }
}

}  // namespace
}  // namespace profiling::runtime
