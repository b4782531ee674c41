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
// samples; a change beyond the noise carries "d" (new less base scaled to
// the new total), a change within it none, a base-only path has "v":0.
TEST(FlameGraph, DifferentialMarksOnlyChangesBeyondTheNoise) {
  FlameGraph graph;
  graph.add(stack({"main", "grew"}), 600);
  graph.add(stack({"main", "same"}), 400);
  graph.add_base(stack({"main", "grew"}), 200);
  graph.add_base(stack({"main", "same"}), 205);
  graph.add_base(stack({"main", "gone"}), 95);
  ASSERT_TRUE(graph.differential());
  EXPECT_EQ(graph.samples(), 1000u);
  EXPECT_EQ(graph.base_samples(), 500u);
  const std::string json = graph.json(graph.samples());
  const std::vector<std::string> names = names_of(json);
  auto node = [&](const std::string& name) {
    const auto id = std::find(names.begin(), names.end(), name) - names.begin();
    std::smatch m;
    if (!std::regex_search(json, m, std::regex("\\{\"n\":" + std::to_string(id) + ",[^{}\\[]*")))
      return std::string();
    return m.str();
  };
  EXPECT_NE(json.find("\"base_total\":500,"), std::string::npos) << json;
  // grew: 40 % -> 60 % of the samples; 600 - 200 x 2 = 200.
  EXPECT_NE(node("grew").find("\"b\":200"), std::string::npos) << json;
  EXPECT_NE(node("grew").find("\"d\":200"), std::string::npos) << json;
  // same: 41 % -> 40 %, noise: no "d"; gone: 19 % -> 0, only in the base.
  EXPECT_NE(node("same").find("\"b\":205"), std::string::npos) << json;
  EXPECT_EQ(node("same").find("\"d\""), std::string::npos) << json;
  EXPECT_NE(node("gone").find("\"v\":0,\"b\":95"), std::string::npos) << json;
  EXPECT_NE(node("gone").find("\"d\":-190"), std::string::npos) << json;
  // A graph of one profile has none of these fields.
  FlameGraph plain;
  plain.add(stack({"main"}), 3);
  EXPECT_FALSE(plain.differential());
  EXPECT_EQ(plain.json(3).find("\"b\":"), std::string::npos);
}

}  // namespace
}  // namespace profiling::report
