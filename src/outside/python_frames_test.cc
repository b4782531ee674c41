// A CPython thread's walk read after the fact (python_frames.h, issue 31's
// cost): a sample taken before the thread's last walk began gets that walk,
// not a read of its own; a sample taken after it gets a new one. On a
// script stopped in os.read, so that every walk reads the same stack.
#include "outside/python_frames.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <vector>

#include "interp/stopped_script.h"
#include "outside/source.h"

namespace profiling::outside {
namespace {

constexpr const char* kPython = "/usr/bin/python3";
constexpr const char* kScript = R"(import os, sys

def inner():
    sys.stdout.write("ready\n"); sys.stdout.flush()
    os.read(0, 1)

def outer():
    inner()

outer()
)";

TEST(PythonFramesLate, ASampleTakenBeforeTheThreadsLastWalkSharesItALaterOneWalksAgain) {
  if (::access(kPython, X_OK) != 0) GTEST_SKIP() << kPython << " is not installed";
  interp::StoppedScript child;
  ASSERT_TRUE(child.start(kPython, "late.py", kScript)) << kPython << " did not reach os.read";
  PythonReads reads;  // no BPF program: after the fact only
  std::string why;
  const auto frames = PythonFrames::open(child.pid(), &why, &reads);
  ASSERT_TRUE(frames) << why;
  // A native stack, leaf first, with one call of the evaluation loop under
  // a C function: where the Python frames go.
  const uint64_t loop = frames->target().eval_loop_start;
  const std::vector<uint64_t> native = {0x1000, loop + 1, 0x2000};

  const uint64_t first_time = monotonic_ns();
  std::vector<uint64_t> first = native;
  frames->merge(child.pid(), first_time, false, &first);
  EXPECT_EQ(reads.read_late, 1u);
  EXPECT_EQ(reads.walks_late, 1u);
  ASSERT_GT(first.size(), native.size()) << "no Python frames were merged";

  // Taken before that walk began: the same walk, no read.
  std::vector<uint64_t> shared = native;
  frames->merge(child.pid(), first_time - 1, false, &shared);
  EXPECT_EQ(reads.read_late, 2u);
  EXPECT_EQ(reads.walks_late, 1u);
  EXPECT_EQ(shared, first);

  // Taken after it began: a walk of its own, of the same stopped stack.
  std::vector<uint64_t> later = native;
  frames->merge(child.pid(), monotonic_ns(), false, &later);
  EXPECT_EQ(reads.read_late, 3u);
  EXPECT_EQ(reads.walks_late, 2u);
  EXPECT_EQ(later, first);
}

}  // namespace
}  // namespace profiling::outside
