#include "top_model.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace profiling::cli {
namespace {

// Names an address from a table, by the object its mapping names, and
// counts what it is asked.
class TableSymbolizer final : public report::FrameSymbolizer {
 public:
  std::vector<report::StackFrame> frames_at(const format::Mapping* mapping, uint64_t address,
                                            const std::vector<format::Frame>* carried, bool, bool) override {
    ++asked;
    report::StackFrame f;
    f.object = mapping ? mapping->path : "[unknown]";
    if (carried && !carried->empty()) f.function = carried->front().function;
    else if (auto it = names.find({f.object, address}); it != names.end()) f.function = it->second;
    else f.function = "[unknown]";
    return {f};
  }
  std::map<std::pair<std::string, uint64_t>, std::string> names;
  int asked = 0;
};

constexpr uint64_t kA = 0x1000, kB = 0x1100, kC = 0x1200, kD = 0x1300;

outside::ImageProfile image(int pid, const std::string& path = "/bin/prog") {
  outside::ImageProfile p;
  p.name = "prog";
  p.data.profile.pid = pid;
  p.data.profile.mappings.push_back({.start = 0x1000, .limit = 0x2000, .file_offset = 0, .path = path, .build_id = ""});
  return p;
}

void add(outside::ImageProfile* p, uint64_t leaf, std::vector<uint64_t> callers, uint64_t count, int tid) {
  const uint32_t stack = p->data.profile.stacks.intern(callers, false);
  format::Sample s{leaf, count, 0, stack, tid};
  p->data.profile.samples.push_back(s);
}

const TopRow* find(const TopSnapshot& s, const std::string& function, int tid = 0) {
  for (const TopRow& r : s.rows)
    if (r.function == function && (tid == 0 || r.tid == tid)) return &r;
  return nullptr;
}

TableSymbolizer named() {
  TableSymbolizer t;
  for (auto [address, name] : {std::pair{kA, "a"}, {kB, "b"}, {kC, "c"}, {kD, "d"}}) t.names[{"/bin/prog", address}] = name;
  t.names[{"/lib/other.so", kA}] = "other_a";
  return t;
}

TEST(TopModel, SelfIsTheLeafTotalIsAnywhereOnTheStackOncePerSample) {
  TableSymbolizer symbols = named();
  TopModel model(symbols);
  outside::ImageProfile p = image(10);
  add(&p, kA, {kB, kC}, 3, 10);
  add(&p, kD, {kB, kC}, 1, 10);
  add(&p, kA, {kA, kB}, 2, 10);  // a recursion: a counts once in its total
  model.add_window({p});
  const TopSnapshot s = model.snapshot();
  ASSERT_NE(find(s, "a"), nullptr);
  EXPECT_EQ(find(s, "a")->all, (TopCounts{5, 5}));
  EXPECT_EQ(find(s, "b")->all, (TopCounts{0, 6}));
  EXPECT_EQ(find(s, "c")->all, (TopCounts{0, 4}));
  EXPECT_EQ(find(s, "d")->all, (TopCounts{1, 1}));
  EXPECT_EQ(find(s, "a")->last, find(s, "a")->all);
  EXPECT_EQ(s.process_samples.at(10).all, 6u);
  EXPECT_EQ(s.process_samples.at(10).last, 6u);
  EXPECT_EQ(find(s, "a")->object, "prog");
}

TEST(TopModel, EachAddressIsNamedOnceWhateverTheWindows) {
  TableSymbolizer symbols = named();
  TopModel model(symbols);
  for (int window = 0; window < 5; ++window) {
    outside::ImageProfile p = image(10);
    add(&p, kA, {kB, kC}, 1, 10);
    add(&p, kD, {kB}, 1, 10);
    model.add_window({p});
  }
  EXPECT_EQ(symbols.asked, 4);
  EXPECT_EQ(model.addresses_named(), 4u);
  EXPECT_EQ(find(model.snapshot(), "b")->all.total, 10u);
}

TEST(TopModel, TheLastWindowIsTheLastOneAloneSinceTheStartIsTheirSum) {
  TableSymbolizer symbols = named();
  TopModel model(symbols);
  outside::ImageProfile first = image(10);
  add(&first, kA, {}, 3, 10);
  model.add_window({first});
  outside::ImageProfile second = image(10);
  add(&second, kD, {}, 2, 10);
  model.add_window({second});
  model.add_window({});
  const TopSnapshot s = model.snapshot();
  EXPECT_EQ(s.windows, 3u);
  EXPECT_EQ(find(s, "a")->last, (TopCounts{0, 0}));
  EXPECT_EQ(find(s, "a")->all, (TopCounts{3, 3}));
  EXPECT_EQ(find(s, "d")->all, (TopCounts{2, 2}));
  EXPECT_EQ(s.process_samples.at(10).last, 0u);
  EXPECT_EQ(s.process_samples.at(10).all, 5u);
}

TEST(TopModel, RowsAreAFunctionInAThreadOfAProcessNamedByTheirObjects) {
  TableSymbolizer symbols = named();
  TopModel model(symbols);
  outside::ImageProfile p = image(10);
  p.data.profile.thread_names = {{10, "main"}, {11, "worker"}};
  add(&p, kA, {}, 1, 10);
  add(&p, kA, {}, 2, 11);
  // Another process, the same address in another object: another function.
  outside::ImageProfile q = image(20, "/lib/other.so");
  q.name = "other";
  add(&q, kA, {}, 4, 20);
  model.add_window({p, q});
  const TopSnapshot s = model.snapshot();
  ASSERT_EQ(s.rows.size(), 3u);
  EXPECT_EQ(find(s, "a", 10)->thread, "main");
  EXPECT_EQ(find(s, "a", 11)->thread, "worker");
  EXPECT_EQ(find(s, "a", 11)->all.self, 2u);
  EXPECT_EQ(find(s, "a", 11)->process, "prog");
  EXPECT_EQ(find(s, "other_a")->pid, 20);
  EXPECT_EQ(find(s, "other_a")->process, "other");
  EXPECT_EQ(find(s, "other_a")->object, "other.so");
  EXPECT_EQ(s.process_names, (std::map<int32_t, std::string>{{10, "prog"}, {20, "other"}}));
}

TEST(TopModel, AnAddressTheFileNamesIsNamedSo) {
  TableSymbolizer symbols = named();
  TopModel model(symbols);
  outside::ImageProfile p = image(10);
  p.data.profile.frames[format::kKernelAddress] = {format::Frame{format::kKernelFrame, format::kKernelFrame, "", 0}};
  add(&p, format::kKernelAddress, {kA}, 2, 10);
  model.add_window({p});
  const TopSnapshot s = model.snapshot();
  EXPECT_EQ(find(s, "[kernel]")->all, (TopCounts{2, 2}));
  EXPECT_EQ(find(s, "a")->all, (TopCounts{0, 2}));
}

}  // namespace
}  // namespace profiling::cli
