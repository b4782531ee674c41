// Debian's ruby 3.1 read from outside (issue 34): a script stops at known
// lines in nested methods (a method of a class, a block under Array#map,
// which is C), and a second thread blocks in its own block; the test reads
// both threads' frames by tid and checks names, files, lines and entry
// frames. Skipped, saying so, where /usr/bin/ruby is not 3.1.
#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "interp/readers.h"
#include "interp/ruby_code.h"
#include "interp/ruby_process.h"
#include "interp/ruby_walk.h"
#include "interp/stopped_script.h"

namespace profiling::interp {
namespace {

constexpr const char* kRuby = "/usr/bin/ruby";

// Lines are counted in the checks below: edit both together.
constexpr const char* kScript = R"(class Worker
  def method
    leaf
  end
end
def leaf
  $stdout.write("ready\n"); $stdout.flush
  $stdin.read(1)
end
def outer
  [1].map { |x| Worker.new.method }
end
q = Queue.new; t = Thread.new { q.pop }
outer
)";

struct Expected {
  const char* name;
  int first_line, line;
  bool entry;
};
// Innermost first, C frames left out: the block runs under Array#map (C),
// so it begins a C call into the VM; <main> is the program's first.
constexpr Expected kMain[] = {
    {"leaf", 6, 8, false},        {"method", 2, 3, false}, {"block in outer", 11, 11, true},
    {"outer", 10, 11, false},     {"<main>", -1, 14, true},
};

struct Frame {
  std::string name, file;
  int first_line = 0, line = 0;
  bool entry = false;
};

class RubyFrames : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access(kRuby, X_OK) != 0) GTEST_SKIP() << kRuby << " is not installed";
    ASSERT_TRUE(child_.start(kRuby, "stops.rb", kScript)) << kRuby << " did not reach leaf";
    pid_ = child_.pid();
    script_ = child_.path();
    std::string why;
    target_ = find_ruby(pid_, &why);
    if (!target_ && why.find("left native") != std::string::npos) GTEST_SKIP() << why;
    ASSERT_TRUE(target_) << why;
    memory_ = std::make_unique<ProcessMemory>(pid_);
    threads_ = std::make_unique<RubyThreads>(*target_, *memory_);
    namer_ = std::make_unique<RubyCodeNamer>(target_->layout, *memory_);
    for (int tries = 0; tries < 500 && !stopped(); ++tries) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }

  std::vector<Frame> frames(pid_t tid, WalkStatus* status = nullptr) {
    threads_->forget(tid);  // a thread not started at the last look
    RawFrame raw[64];
    const WalkResult walk = walk_ruby_frames(target_->layout, *memory_, threads_->execution_context(tid), raw, 64);
    if (status != nullptr) *status = walk.status;
    std::vector<Frame> out;
    for (uint32_t i = 0; i < walk.count; ++i) {
      const uint32_t id = namer_->identify(raw[i].code);
      if (id == RubyCodeNamer::kNoCode) return {};
      const RubyCode& code = namer_->code(id);
      out.push_back(Frame{code.name, code.file, code.first_line, namer_->line(code, raw[i].instruction),
                          (raw[i].flags & kEntryFrame) != 0});
    }
    return out;
  }

  pid_t other_thread() {
    // The last task started: Thread.new's (Ruby's timer thread starts
    // first, on demand, and has no Ruby frames).
    pid_t found = 0;
    const std::string task = "/proc/" + std::to_string(pid_) + "/task";
    DIR* dir = ::opendir(task.c_str());
    while (dirent* entry = dir ? ::readdir(dir) : nullptr) {
      const pid_t tid = static_cast<pid_t>(std::atoi(entry->d_name));
      if (tid > 0 && tid != pid_ && !frames(tid).empty()) found = tid;
    }
    if (dir) ::closedir(dir);
    return found;
  }

  bool stopped() {
    const auto main = frames(pid_);
    const pid_t other = other_thread();
    return !main.empty() && main[0].line == 8 && other != 0 && frames(other)[0].line == 13;
  }

  StoppedScript child_;  // killed last
  pid_t pid_ = 0;
  std::string script_;
  std::optional<RubyTarget> target_;
  std::unique_ptr<ProcessMemory> memory_;
  std::unique_ptr<RubyThreads> threads_;
  std::unique_ptr<RubyCodeNamer> namer_;
};

TEST_F(RubyFrames, FindsTheRuntime) {
  EXPECT_EQ(target_->version.substr(0, 4), "3.1.");
  EXPECT_NE(target_->image.find("libruby-3.1.so"), std::string::npos) << target_->image;
  EXPECT_NE(target_->bias, 0u);
  EXPECT_LT(target_->eval_loop_start, target_->eval_loop_end);
}

TEST_F(RubyFrames, NamesFilesLinesAndEntries) {
  WalkStatus status;
  const auto stack = frames(pid_, &status);
  EXPECT_EQ(status, WalkStatus::kComplete);
  ASSERT_EQ(stack.size(), std::size(kMain));
  for (size_t i = 0; i < std::size(kMain); ++i) {
    SCOPED_TRACE(kMain[i].name);
    EXPECT_EQ(stack[i].name, kMain[i].name);
    EXPECT_EQ(stack[i].file, script_);
    if (kMain[i].first_line >= 0) {
      EXPECT_EQ(stack[i].first_line, kMain[i].first_line);
    }
    EXPECT_EQ(stack[i].line, kMain[i].line);
    EXPECT_EQ(stack[i].entry, kMain[i].entry);
  }
}

TEST_F(RubyFrames, SecondThreadByTid) {
  const pid_t other = other_thread();
  ASSERT_NE(other, 0);
  const auto stack = frames(other);
  ASSERT_EQ(stack.size(), 1u);
  EXPECT_EQ(stack[0].name, "block in <main>");
  EXPECT_EQ(stack[0].line, 13);
  EXPECT_TRUE(stack[0].entry);
}

// A cut walk says so and keeps the innermost frames.
TEST_F(RubyFrames, TruncatedWalk) {
  RawFrame raw[2];
  const WalkResult walk = walk_ruby_frames(target_->layout, *memory_, threads_->execution_context(pid_), raw, 2);
  EXPECT_EQ(walk.status, WalkStatus::kTruncated);
  EXPECT_EQ(walk.count, 2u);
  EXPECT_EQ(namer_->code(namer_->identify(raw[0].code)).name, "leaf");
}

TEST_F(RubyFrames, NoThreadNoFrames) {
  EXPECT_EQ(threads_->execution_context(1), 0u);
  RawFrame raw[4];
  EXPECT_EQ(walk_ruby_frames(target_->layout, *memory_, 0, raw, 4).status, WalkStatus::kReadError);
}

}  // namespace
}  // namespace profiling::interp
