// Every CPython on the machine (pyenv's 2.7 and 3.6-3.13, Debian's
// /usr/bin/python3.11), read from outside: a script stops at known lines
// in nested functions (a method, a callback under sorted(), a C function),
// and a second thread blocks in its own function; the test reads both
// threads' stacks by tid and checks names, files, lines and entry frames.
// A version not installed is skipped with its path.
#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "interp/python_stack.h"
#include "interp/stopped_script.h"

namespace profiling::interp {
namespace {

// Lines are counted in the checks below: edit both together.
constexpr const char* kScript = R"(import os, sys, threading

class Worker(object):
    def method(self):
        return leaf()

def leaf():
    sys.stdout.write("ready\n"); sys.stdout.flush()
    os.read(0, 1)

def key(x):
    return Worker().method()

def outer():
    return sorted([1], key=key)

def thread_body():
    os.read(0, 1)

t = threading.Thread(target=thread_body)
t.daemon = True
t.start()
outer()
)";

struct Expected {
  const char* name;
  const char* qualname;  // 3.11+
  int first_line, line;
  bool entry_311;  // an eval-loop entry on 3.11+ (on ≤3.10 every frame is one)
};
// Innermost first: key runs under sorted() (C), so it begins a call of the
// loop; <module> is the program's first.
constexpr Expected kMain[] = {
    {"leaf", "leaf", 7, 9, false},     {"method", "Worker.method", 4, 5, false}, {"key", "key", 11, 12, true},
    {"outer", "outer", 14, 15, false}, {"<module>", "<module>", 1, 23, true},
};

struct Python {
  const char* label;
  const char* path;
  int major, minor;
};

const Python kPythons[] = {
    {"pyenv_2_7", "/root/.pyenv/versions/2.7.18/bin/python2.7", 2, 7},
    {"pyenv_3_6", "/root/.pyenv/versions/3.6.15/bin/python3.6", 3, 6},
    {"pyenv_3_7", "/root/.pyenv/versions/3.7.16/bin/python3.7", 3, 7},
    {"pyenv_3_8", "/root/.pyenv/versions/3.8.18/bin/python3.8", 3, 8},
    {"pyenv_3_9", "/root/.pyenv/versions/3.9.18/bin/python3.9", 3, 9},
    {"pyenv_3_10", "/root/.pyenv/versions/3.10.13/bin/python3.10", 3, 10},
    {"pyenv_3_11", "/root/.pyenv/versions/3.11.7/bin/python3.11", 3, 11},
    {"pyenv_3_12", "/root/.pyenv/versions/3.12.1/bin/python3.12", 3, 12},
    {"pyenv_3_13", "/root/.pyenv/versions/3.13.0/bin/python3.13", 3, 13},
    {"debian_3_11", "/usr/bin/python3.11", 3, 11},
};

void PrintTo(const Python& python, std::ostream* out) { *out << python.path; }

class PythonFrames : public ::testing::TestWithParam<Python> {
 protected:
  void SetUp() override {
    const Python& python = GetParam();
    if (::access(python.path, X_OK) != 0) GTEST_SKIP() << python.path << " is not installed";
    ASSERT_TRUE(child_.start(python.path, "stops.py", kScript)) << python.path << " did not reach leaf()";
    pid_ = child_.pid();
    script_ = child_.path();
    std::string why;
    reader_ = PythonStackReader::open(pid_, &why);
    ASSERT_NE(reader_, nullptr) << why;
    // Both threads stopped where the script says (the main thread wrote
    // "ready" just before its read; the other may still be on its way).
    for (int tries = 0; tries < 500 && !stopped(); ++tries) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }

  pid_t other_thread() const {
    pid_t found = 0;
    const std::string task = "/proc/" + std::to_string(pid_) + "/task";
    DIR* dir = ::opendir(task.c_str());
    while (dirent* entry = dir ? ::readdir(dir) : nullptr) {
      const pid_t tid = static_cast<pid_t>(std::atoi(entry->d_name));
      if (tid > 0 && tid != pid_) found = tid;
    }
    if (dir) ::closedir(dir);
    return found;
  }

  bool stopped() {
    auto main = reader_->thread(pid_);
    auto other = reader_->thread(other_thread());
    return main && !main->frames.empty() && main->frames[0].line == 9 && other && !other->frames.empty() &&
           other->frames[0].line == 18;
  }

  bool new_frames() const { return GetParam().major == 3 && GetParam().minor >= 11; }

  StoppedScript child_;  // killed last
  pid_t pid_ = 0;
  std::string script_;
  std::unique_ptr<PythonStackReader> reader_;
};

TEST_P(PythonFrames, FindsTheRuntime) {
  const PythonTarget& target = reader_->target();
  EXPECT_EQ(target.major, GetParam().major);
  EXPECT_EQ(target.minor, GetParam().minor);
  EXPECT_NE(target.runtime != 0 ? target.runtime : target.interp_head, 0u);
  EXPECT_NE(target.code_type, 0u);
  if (std::string(GetParam().label) == "debian_3_11") {
    // The static interpreter: no libpython, the 3.11 table, no bias.
    EXPECT_EQ(target.image, "/usr/bin/python3.11");
    EXPECT_EQ(target.bias, 0u);
  } else {
    EXPECT_NE(target.image.find("libpython"), std::string::npos) << target.image;
    EXPECT_NE(target.bias, 0u);
  }
}

TEST_P(PythonFrames, NamesFilesAndLines) {
  auto stack = reader_->thread(pid_);
  ASSERT_TRUE(stack);
  EXPECT_EQ(stack->status, WalkStatus::kComplete);
  ASSERT_EQ(stack->frames.size(), std::size(kMain));
  for (size_t i = 0; i < std::size(kMain); ++i) {
    const PythonFrame& frame = stack->frames[i];
    SCOPED_TRACE(kMain[i].name);
    ASSERT_TRUE(frame.named);
    EXPECT_EQ(frame.name, new_frames() ? kMain[i].qualname : kMain[i].name);
    EXPECT_EQ(frame.file, script_);
    EXPECT_EQ(frame.first_line, kMain[i].first_line);
    EXPECT_EQ(frame.line, kMain[i].line);
  }
}

TEST_P(PythonFrames, EntryFrames) {
  auto stack = reader_->thread(pid_);
  ASSERT_TRUE(stack);
  ASSERT_EQ(stack->frames.size(), std::size(kMain));
  for (size_t i = 0; i < std::size(kMain); ++i)
    EXPECT_EQ(stack->frames[i].entry, new_frames() ? kMain[i].entry_311 : true) << kMain[i].name;
}

// The callback under sorted() (C code between two Python frames) is its own
// call of the eval loop: the frame outside it (outer) belongs to another one.
TEST_P(PythonFrames, CExtensionPath) {
  auto stack = reader_->thread(pid_);
  ASSERT_TRUE(stack);
  ASSERT_GE(stack->frames.size(), 4u);
  EXPECT_EQ(stack->frames[2].first_line, 11);  // key
  EXPECT_TRUE(stack->frames[2].entry);
  EXPECT_EQ(stack->frames[3].line, 15);  // outer, at its sorted() call
  int entries = 0;
  for (const PythonFrame& frame : stack->frames) entries += frame.entry;
  EXPECT_EQ(entries, new_frames() ? 2 : 5);
}

TEST_P(PythonFrames, SecondThreadByTid) {
  const pid_t tid = other_thread();
  ASSERT_GT(tid, 0);
  auto stack = reader_->thread(tid);
  ASSERT_TRUE(stack) << "no PyThreadState for tid " << tid;
  EXPECT_NE(stack->thread_state, reader_->thread(pid_)->thread_state);
  ASSERT_GE(stack->frames.size(), 2u);
  EXPECT_EQ(stack->frames[0].name, "thread_body");
  EXPECT_EQ(stack->frames[0].file, script_);
  EXPECT_EQ(stack->frames[0].first_line, 17);
  EXPECT_EQ(stack->frames[0].line, 18);
  EXPECT_NE(stack->frames.back().file.find("threading.py"), std::string::npos) << stack->frames.back().file;
  EXPECT_TRUE(stack->frames.back().entry);
  // Every thread state has a tid; nothing else runs Python here.
  auto all = reader_->all_threads();
  ASSERT_EQ(all.size(), 2u);
  for (const auto& s : all) EXPECT_TRUE(s.tid == pid_ || s.tid == tid) << s.tid;
}

INSTANTIATE_TEST_SUITE_P(Versions, PythonFrames, ::testing::ValuesIn(kPythons),
                         [](const ::testing::TestParamInfo<Python>& info) { return std::string(info.param.label); });

}  // namespace
}  // namespace profiling::interp
