// The flame graph's tree: stacks merged from the root, totals that add up,
// names interned, the JSON safe inside a <script> element, and no recursion
// on deep stacks.
#include "report/flame_graph.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <regex>
#include <string>
#include <vector>

namespace profiling::report {
namespace {

std::vector<FlameFrame> stack(std::initializer_list<const char*> names, const char* object = "prog") {
  std::vector<FlameFrame> frames;
  for (const char* name : names) frames.push_back({name, object, false});
  return frames;
}

// The "names" table: nodes name frames by their index in it.
std::vector<std::string> names_of(const std::string& json) {
  std::smatch table;
  std::regex_search(json, table, std::regex(R"re("names":\[([^\]]*)\])re"));
  std::vector<std::string> names;
  std::string list = table[1];
  std::regex item(R"re("((?:[^"\\]|\\.)*)")re");
  for (auto it = std::sregex_iterator(list.begin(), list.end(), item); it != std::sregex_iterator(); ++it)
    names.push_back((*it)[1]);
  return names;
}

TEST(FlameGraph, MergesStacksFromTheRoot) {
  FlameGraph graph;
  graph.add(stack({"main", "work", "leaf"}), 60);
  graph.add(stack({"main", "work"}), 25);
  graph.add(stack({"main", "other"}), 10);
  graph.add(stack({"main", "work", "leaf"}), 5);
  graph.add(stack({}), 0);  // nothing: no node, no count
  EXPECT_EQ(graph.samples(), 100u);
  const std::string json = graph.json(200);
  const std::vector<std::string> names = names_of(json);
  ASSERT_EQ(names.size(), 5u);  // all, main, work, leaf, other
  auto id = [&](const std::string& name) { return std::find(names.begin(), names.end(), name) - names.begin(); };
  // The denominator is the one given (all samples), not the graph's own.
  EXPECT_NE(json.find("\"total\":200,"), std::string::npos);
  // all 100 -> main 100 -> {other 10, work 90 -> leaf 65}, children in name order.
  const std::string expected = "\"tree\":{\"n\":0,\"o\":0,\"v\":100,\"c\":[{\"n\":" + std::to_string(id("main")) +
                               ",\"o\":1,\"v\":100,\"c\":[{\"n\":" + std::to_string(id("other")) +
                               ",\"o\":1,\"v\":10},{\"n\":" + std::to_string(id("work")) + ",\"o\":1,\"v\":90,\"c\":[{\"n\":" +
                               std::to_string(id("leaf")) + ",\"o\":1,\"v\":65}]}]}]}}";
  EXPECT_NE(json.find(expected), std::string::npos) << json;
}

TEST(FlameGraph, SameNameInAnotherObjectOrInlinedIsAnotherFrame) {
  FlameGraph graph;
  graph.add({{"main", "prog", false}, {"f", "libone.so", false}}, 1);
  graph.add({{"main", "prog", false}, {"f", "libtwo.so", false}}, 2);
  graph.add({{"main", "prog", false}, {"f", "prog", true}}, 4);
  const std::string json = graph.json(7);
  EXPECT_NE(json.find("\"objects\":[\"\",\"prog\",\"libone.so\",\"libtwo.so\"]"), std::string::npos) << json;
  EXPECT_NE(json.find("\"v\":1}"), std::string::npos);
  EXPECT_NE(json.find("\"v\":2}"), std::string::npos);
  EXPECT_NE(json.find("\"v\":4,\"i\":1}"), std::string::npos) << json;
}

TEST(FlameGraph, JsonCannotEndItsScriptElement) {
  FlameGraph graph;
  graph.add(stack({"</script><script>alert(1)</script>", "<!--", "a\"b\\c\nd"}), 3);
  const std::string json = graph.json(3);
  EXPECT_EQ(json.find('<'), std::string::npos) << json;
  EXPECT_NE(json.find("\\u003c/script>"), std::string::npos);
  EXPECT_NE(json.find("a\\\"b\\\\c\\nd"), std::string::npos) << json;
}

TEST(FlameGraph, CountsSaturate) {
  FlameGraph graph;
  graph.add(stack({"main"}), UINT64_MAX - 1);
  graph.add(stack({"main"}), 5);
  EXPECT_EQ(graph.samples(), UINT64_MAX);
}

TEST(FlameGraph, DeepStacksNeedNoRecursion) {
  // 100,000 frames: a recursive writer would need a frame of its own per level.
  std::vector<std::string> storage;
  for (int i = 0; i < 100000; ++i) storage.push_back("f" + std::to_string(i % 7));
  std::vector<FlameFrame> frames;
  for (const std::string& name : storage) frames.push_back({name, "prog", false});
  FlameGraph graph;
  graph.add(frames, 9);
  const std::string json = graph.json(9);
  EXPECT_EQ(names_of(json).size(), 8u);  // all + f0..f6
  size_t opened = 0, closed = 0;
  for (char c : json) {
    opened += c == '{';
    closed += c == '}';
  }
  EXPECT_EQ(opened, 100002u);  // the document, the root and every frame
  EXPECT_EQ(opened, closed);
}

// profil diff's graph: the new stacks' shape, each node with its base
// samples; a node whose self samples changed beyond the noise carries "d"
// (new less base at the sides' exposures), one within it none, a base-only
// path has "v":0. The colour rule of issue 35: one function grows, and
// every other frame's share falls (its "q" says so) but not its samples,
// so only the one that grew is coloured; its callers, whose totals grew
// with it, are not.
std::string node_of(const std::string& json, const std::string& name) {
  const std::vector<std::string> names = names_of(json);
  const auto id = std::find(names.begin(), names.end(), name) - names.begin();
  std::smatch m;
  if (!std::regex_search(json, m, std::regex("\\{\"n\":" + std::to_string(id) + ",[^{}\\[]*"))) return {};
  return m.str();
}

double field(const std::string& node, const std::string& name) {
  std::smatch m;
  if (!std::regex_search(node, m, std::regex("\"" + name + "\":([-+0-9.e]+)"))) return -1;
  return std::stod(m[1]);
}

TEST(FlameGraph, DifferentialColoursOnlyTheFunctionWhoseSamplesChanged) {
  FlameGraph graph;
  graph.add(stack({"main", "caller", "grew"}), 1200);
  graph.add(stack({"main", "caller"}), 300);
  graph.add(stack({"main", "same"}), 400);
  graph.add(stack({"main"}), 30);
  graph.add_base(stack({"main", "caller", "grew"}), 400);
  graph.add_base(stack({"main", "caller"}), 300);
  graph.add_base(stack({"main", "same"}), 400);
  graph.add_base(stack({"main", "gone"}), 95);
  graph.add_base(stack({"main"}), 30);
  ASSERT_TRUE(graph.differential());
  EXPECT_EQ(graph.samples(), 1930u);
  EXPECT_EQ(graph.base_samples(), 1225u);
  const std::string json = graph.json(graph.samples());
  EXPECT_NE(json.find("\"base_total\":1225,\"rate_per\":\"run\","), std::string::npos) << json;
  // grew: 400 -> 1200 self samples at one rate: +800, beyond the noise.
  EXPECT_EQ(field(node_of(json, "grew"), "b"), 400) << json;
  EXPECT_EQ(field(node_of(json, "grew"), "d"), 800) << json;
  EXPECT_LT(field(node_of(json, "grew"), "r"), 0.05) << json;
  // same: 400 -> 400 samples, its share 33 % -> 21 % (q below the level:
  // the old rule painted it blue); no "d".
  EXPECT_LT(field(node_of(json, "same"), "q"), 0.05) << json;
  EXPECT_EQ(field(node_of(json, "same"), "r"), 1) << json;
  EXPECT_EQ(node_of(json, "same").find("\"d\""), std::string::npos) << json;
  // caller and main: their totals grew with grew, their self samples did not.
  for (const char* unchanged : {"caller", "main"})
    EXPECT_EQ(node_of(json, unchanged).find("\"d\""), std::string::npos) << unchanged << ": " << json;
  // gone: only in the base, 95 samples lost.
  EXPECT_NE(node_of(json, "gone").find("\"v\":0,\"b\":95"), std::string::npos) << json;
  EXPECT_EQ(field(node_of(json, "gone"), "d"), -95) << json;
  // A graph of one profile has none of these fields.
  FlameGraph plain;
  plain.add(stack({"main"}), 3);
  EXPECT_FALSE(plain.differential());
  EXPECT_EQ(plain.json(3).find("\"b\":"), std::string::npos);
}


// --per-second: the new profile covers twice the wall time, so twice the
// samples of a function is no change of its seconds per second; three
// times is, by the samples beyond the base's at the new duration.
TEST(FlameGraph, DifferentialPerSecondScalesTheBaseByTheExposures) {
  FlameGraph graph;
  graph.add(stack({"main", "steady"}), 800);
  graph.add(stack({"main", "grew"}), 1200);
  graph.add_base(stack({"main", "steady"}), 400);
  graph.add_base(stack({"main", "grew"}), 400);
  graph.set_exposures(500.0 * 10, 500.0 * 20, true);  // 500 Hz, 10 s and 20 s
  const std::string json = graph.json(graph.samples());
  EXPECT_NE(json.find("\"rate_per\":\"wall_second\""), std::string::npos) << json;
  EXPECT_EQ(node_of(json, "steady").find("\"d\""), std::string::npos) << json;
  EXPECT_GT(field(node_of(json, "steady"), "r"), 0.05) << json;
  EXPECT_EQ(field(node_of(json, "grew"), "d"), 400) << json;  // 1200 - 400 x 2
  EXPECT_EQ(node_of(json, "main").find("\"d\""), std::string::npos) << json;
}

}  // namespace
}  // namespace profiling::report
