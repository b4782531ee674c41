#include "report/interpreter_view.h"

#include <gtest/gtest.h>

#include <vector>

namespace {

using profiling::format::kInterpreterFrameBase;
using profiling::format::Profile;
using profiling::format::Sample;
using profiling::report::apply_interpreter_view;
using profiling::report::InterpreterView;
using profiling::report::parse_interpreter_view;

constexpr uint64_t kLeaf = 0x1000, kEval = 0x2000, kJson = 0x3000, kMain = 0x4000;
constexpr uint64_t kHook = kInterpreterFrameBase + 0, kParse = kInterpreterFrameBase + 1,
                   kMainPy = kInterpreterFrameBase + 2;

// main (C) -> eval [main.py:main -> parse.py:parse] -> _json (C) -> eval
// [parse.py:hook], the leaf in the loop: as the outside sampler merges it.
Profile python_profile() {
  Profile p;
  const std::vector<uint64_t> callers = {kEval, kJson, kParse, kMainPy, kEval + 8, kMain};
  Sample s;
  s.address = kHook;
  s.count = 3;
  s.stack = p.stacks.intern(callers, false);
  p.samples.push_back(s);
  Sample native;  // a thread without Python frames
  native.address = kLeaf;
  native.count = 2;
  native.stack = p.stacks.intern(std::vector<uint64_t>{kMain}, false);
  p.samples.push_back(native);
  return p;
}

std::vector<uint64_t> chain_of(const Profile& p, uint64_t count) {
  for (const Sample& s : p.samples) {
    if (s.count != count) continue;
    std::vector<uint64_t> chain = {s.address};
    const auto callers = p.stacks.callers(s.stack);
    chain.insert(chain.end(), callers.begin(), callers.end());
    return chain;
  }
  return {};
}

TEST(InterpreterView, MergedDropsTheLoopFramesThatRanPythonFrames) {
  Profile p = python_profile();
  apply_interpreter_view(&p, InterpreterView::merged);
  EXPECT_EQ(chain_of(p, 3), (std::vector<uint64_t>{kHook, kJson, kParse, kMainPy, kMain}));
  EXPECT_EQ(chain_of(p, 2), (std::vector<uint64_t>{kLeaf, kMain}));
}

TEST(InterpreterView, PythonKeepsPythonFramesAndNativeThreads) {
  Profile p = python_profile();
  apply_interpreter_view(&p, InterpreterView::python);
  EXPECT_EQ(chain_of(p, 3), (std::vector<uint64_t>{kHook, kParse, kMainPy}));
  EXPECT_EQ(chain_of(p, 2), (std::vector<uint64_t>{kLeaf, kMain}));
}

TEST(InterpreterView, NativeIsTheStackTheCpuHad) {
  Profile p = python_profile();
  apply_interpreter_view(&p, InterpreterView::native);
  EXPECT_EQ(chain_of(p, 3), (std::vector<uint64_t>{kEval, kJson, kEval + 8, kMain}));
}

TEST(InterpreterView, ProfileWithoutInterpreterFramesIsUntouched) {
  Profile p;
  Sample s;
  s.address = kLeaf;
  s.count = 1;
  s.stack = p.stacks.intern(std::vector<uint64_t>{kEval, kMain}, true);
  p.samples.push_back(s);
  const Profile before = p;
  apply_interpreter_view(&p, InterpreterView::python);
  EXPECT_EQ(p, before);
  EXPECT_EQ(parse_interpreter_view("merged"), InterpreterView::merged);
  // Ruby's frames (issue 34) take the same view as Python's.
  EXPECT_EQ(parse_interpreter_view("ruby"), InterpreterView::python);
  EXPECT_FALSE(parse_interpreter_view("perl").has_value());
}

}  // namespace
