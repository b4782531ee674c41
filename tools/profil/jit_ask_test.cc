// What profil run --jit gives node and takes back (jit_ask.h): the flags
// added to NODE_OPTIONS, never twice, and the code logs V8 wrote by them
// removed, no other file.
#include "jit_ask.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

namespace profiling::cli {
namespace {

namespace fs = std::filesystem;

TEST(JitAsk, NodeOptionsGainTheMapFlagOnce) {
  bool added = false;
  std::vector<std::string> env{"PATH=/usr/bin"};
  EXPECT_NE(add_jit_environment(&env, &added).find("NODE_OPTIONS=--perf-basic-prof"), std::string::npos);
  EXPECT_TRUE(added);
  EXPECT_EQ(env.back(), "NODE_OPTIONS=--perf-basic-prof --interpreted-frames-native-stack");
  env = {"NODE_OPTIONS=--max-old-space-size=64"};
  add_jit_environment(&env, &added);
  EXPECT_TRUE(added);
  EXPECT_EQ(env, std::vector<std::string>{"NODE_OPTIONS=--max-old-space-size=64 --perf-basic-prof "
                                          "--interpreted-frames-native-stack"});
  // The user's own map flag: left as it is, and the logs it makes are theirs.
  for (const char* own : {"NODE_OPTIONS=--perf-prof", "NODE_OPTIONS=--perf-basic-prof-only-functions"}) {
    env = {own};
    EXPECT_NE(add_jit_environment(&env, &added).find("already"), std::string::npos);
    EXPECT_FALSE(added);
    EXPECT_EQ(env, std::vector<std::string>{own});
  }
}

TEST(JitAsk, OnlyTheCodeLogsOfTheRunsProcessesWrittenSinceItBeganAreRemoved) {
  char name[] = "/tmp/jit_ask_test.XXXXXX";
  ASSERT_NE(mkdtemp(name), nullptr);
  const fs::path dir = name, before = fs::current_path();
  const auto write = [&](const std::string& file) {
    std::ofstream(dir / file) << "v8-version,11,3\n";
    return dir / file;
  };
  const fs::path old_log = write("isolate-0x1234-41-v8.log");
  fs::last_write_time(old_log, fs::file_time_type::clock::now() - std::chrono::hours(1));
  fs::current_path(dir);  // where the run starts
  JitAsker asker(0, {}, dir);
  fs::current_path(before);
  const fs::path ours = write("isolate-0x55d0c0-41-v8.log"), other_pid = write("isolate-0x55d0c0-42-v8.log"),
                 not_a_log = write("isolate-0x55d0c0-41-v8.log.txt");
  asker.stop();
  asker.remove_v8_logs({41});
  EXPECT_FALSE(fs::exists(ours));
  EXPECT_TRUE(fs::exists(old_log));    // older than the run: not its flag's
  EXPECT_TRUE(fs::exists(other_pid));  // no process of the run
  EXPECT_TRUE(fs::exists(not_a_log));
  ASSERT_EQ(asker.lines().size(), 1u);
  EXPECT_NE(asker.lines()[0].find("removed 1 code log"), std::string::npos) << asker.lines()[0];
  fs::remove_all(dir);
}

}  // namespace
}  // namespace profiling::cli
