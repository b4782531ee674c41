#include "report/runtime_hints.h"

#include <gtest/gtest.h>

namespace {

using profiling::format::Mapping;
using profiling::format::Profile;
using profiling::report::runtime_hints;
using profiling::report::SymbolizedProfile;
using profiling::report::SymbolizedSample;

SymbolizedSample sample(const Mapping* mapping, uint64_t count, bool named) {
  SymbolizedSample s;
  s.mapping = mapping;
  s.count = count;
  s.symbol.known = named;
  return s;
}

TEST(RuntimeHints, NodesJitCodeNamesItsFlag) {
  Profile profile;
  profile.program = "/usr/bin/node";
  const Mapping anon{0x1000, 0x2000, 0, "[anon]", ""}, node{0x4000, 0x8000, 0, "/usr/bin/node", ""};
  SymbolizedProfile s;
  s.profile = &profile;
  s.total = 100;
  s.samples = {sample(&anon, 60, false), sample(&node, 40, true)};
  const auto hints = runtime_hints(s);
  ASSERT_EQ(hints.size(), 1u);
  EXPECT_NE(hints[0].find("60% of the samples are JIT code"), std::string::npos) << hints[0];
  EXPECT_NE(hints[0].find("profil run --jit"), std::string::npos) << hints[0];
  EXPECT_NE(hints[0].find("--perf-basic-prof"), std::string::npos) << hints[0];
}

TEST(RuntimeHints, NamedJitCodeAndSmallSharesSayNothing) {
  Profile profile;
  profile.program = "/usr/bin/java";
  const Mapping anon{0x1000, 0x2000, 0, "[anon]", ""}, ruby{0x4000, 0x8000, 0, "/usr/lib/libruby-3.1.so.3.1", ""};
  SymbolizedProfile s;
  s.profile = &profile;
  s.total = 100;
  s.samples = {sample(&anon, 60, true), sample(&ruby, 10, false), sample(&anon, 10, false)};
  EXPECT_TRUE(runtime_hints(s).empty());
  s.samples = {sample(&anon, 30, false), sample(&ruby, 70, true)};
  const auto hints = runtime_hints(s);
  ASSERT_EQ(hints.size(), 2u);
  EXPECT_NE(hints[0].find("profil attach --jit"), std::string::npos) << hints[0];
  EXPECT_NE(hints[0].find("jcmd PID Compiler.perfmap"), std::string::npos) << hints[0];
  EXPECT_NE(hints[1].find("Ruby's interpreter"), std::string::npos) << hints[1];
}

}  // namespace

// Ruby's methods read (issue 34): the interpreter's share is theirs, no hint.
TEST(RuntimeHints, RubyMethodsInTheProfileSayNothing) {
  Profile profile;
  profile.program = "/usr/bin/ruby";
  const Mapping ruby{0x4000, 0x8000, 0, "/usr/lib/libruby-3.1.so.3.1", ""};
  SymbolizedProfile s;
  s.profile = &profile;
  s.total = 100;
  s.samples = {sample(&ruby, 90, false)};
  ASSERT_EQ(runtime_hints(s).size(), 1u);
  profile.frames[profiling::format::kRubyFrameBase + 5] = {profiling::format::Frame{"work", "work", "a.rb", 3}};
  EXPECT_TRUE(runtime_hints(s).empty());
  // A Python frame is not a Ruby method.
  profile.frames.clear();
  profile.frames[profiling::format::kInterpreterFrameBase + 5] = {profiling::format::Frame{"f", "f", "a.py", 3}};
  EXPECT_EQ(runtime_hints(s).size(), 1u);
}
