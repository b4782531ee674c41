// The stack model (stacks.h) and the views that read it (stack_views.h),
// on synthetic profiles named by a symbolizer that answers from a table:
// no ELF, and inline frames wherever the test puts them.
#include "report/stacks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <cstdio>
#include <random>

#include "report/call_relations.h"
#include "report/diff.h"
#include "report/render.h"
#include "report/report.h"
#include "report/stack_views.h"

namespace profiling::report {
namespace {

// Answers each address from a table: innermost first, inlined ones marked.
class TableSymbolizer : public FrameSymbolizer {
 public:
  void name(uint64_t address, std::vector<std::string> innermost_first, std::string object = "/bin/app") {
    table_[address] = {std::move(innermost_first), std::move(object)};
  }
  std::vector<StackFrame> frames_at(const format::Mapping*, uint64_t address, const std::vector<format::Frame>*,
                                    bool lines, bool) override {
    ++calls;
    std::vector<StackFrame> out;
    auto it = table_.find(address);
    if (it == table_.end()) return {StackFrame{kUnknownFunction, kUnknownFunction, "[unknown]", "", 0, false}};
    const auto& [names, object] = it->second;
    for (size_t i = 0; i < names.size(); ++i) {
      StackFrame f;
      f.raw_function = names[i];
      f.function = drop_symbol_version(names[i]);
      f.object = object;
      if (lines) {
        f.file = "app.c";
        f.line = static_cast<int>(address & 0xff);
      }
      f.inlined = i + 1 < names.size();
      out.push_back(std::move(f));
    }
    return out;
  }
  size_t calls = 0;

 private:
  std::map<uint64_t, std::pair<std::vector<std::string>, std::string>> table_;
};

// main -> work -> (square inlined into middle inlined into) outer, and a
// recursive chain rec -> rec -> rec.
struct Fixture {
  format::Profile profile;
  TableSymbolizer symbolizer;
  Fixture() {
    profile.period_ns = 1'000'000;
    symbolizer.name(0x100, {"main"});
    symbolizer.name(0x200, {"work"});
    symbolizer.name(0x300, {"square", "middle", "outer"});
    symbolizer.name(0x301, {"middle", "outer"});
    symbolizer.name(0x400, {"rec"});
    symbolizer.name(0x401, {"rec"});
    symbolizer.name(0x500, {"__libc_start_main@@GLIBC_2.34"}, "/lib/libc.so.6");
    const uint32_t work = profile.stacks.intern(std::vector<uint64_t>{0x200, 0x100, 0x500}, false);
    const uint32_t recursion = profile.stacks.intern(std::vector<uint64_t>{0x401, 0x401, 0x100, 0x500}, false);
    const uint32_t cut = profile.stacks.intern(std::vector<uint64_t>{0x200}, true);
    const uint32_t in_main = profile.stacks.intern(std::vector<uint64_t>{0x100, 0x500}, false);
    profile.samples = {{0x300, 10, 0, work}, {0x301, 5, 0, work},    {0x200, 3, 0, in_main},
                       {0x400, 4, 0, recursion}, {0x300, 2, 0, cut}, {0x100, 1, 0, 0}};
  }
  std::vector<std::string> folded(const StackSet& set) {
    std::vector<std::string> lines;
    for (const Stack& s : set.stacks()) {
      std::string line;
      for (FrameId id : s.frames) line += (line.empty() ? "" : ";") + frame_label(set.frames()[id]);
      lines.push_back(line + " " + std::to_string(s.count));
    }
    std::sort(lines.begin(), lines.end());
    return lines;
  }
};

TEST(Stacks, RootFirstWithInlineFramesAndVersionsDropped) {
  Fixture f;
  StackSet set = build_stacks(f.profile, f.symbolizer);
  EXPECT_EQ(set.total(), 25u);
  EXPECT_EQ(set.kept(), 25u);
  EXPECT_EQ(f.folded(set), (std::vector<std::string>{
                               "[truncated];work;outer;middle (inline);square (inline) 2",
                               "__libc_start_main;main;rec;rec;rec 4",
                               "__libc_start_main;main;work 3",
                               "__libc_start_main;main;work;outer;middle (inline) 5",
                               "__libc_start_main;main;work;outer;middle (inline);square (inline) 10",
                               "main 1",
                           }));
  for (const StackFrame& frame : set.frames())
    if (frame.function == "__libc_start_main") {
      EXPECT_EQ(frame.raw_function, "__libc_start_main@@GLIBC_2.34");
    }
  // Each caller address is named once, each leaf once per run of samples.
  EXPECT_EQ(f.symbolizer.calls, 4u + 6u);  // 0x300 twice: not consecutive
  // Without inline frames: the function the symbol table names.
  StackSet flat = build_stacks(f.profile, f.symbolizer, {.lines = false, .inline_frames = false});
  EXPECT_EQ(f.folded(flat)[3], "__libc_start_main;main;work;outer 15");
}

TEST(Stacks, SelfAndCumulativeCountRecursionOnce) {
  Fixture f;
  StackSet set = build_stacks(f.profile, f.symbolizer);
  const auto self = set.self_by_frame(), cumulative = set.cumulative_by_frame();
  std::map<std::string, std::pair<uint64_t, uint64_t>> by_name;  // label -> (self, cumulative)
  for (size_t i = 0; i < set.frames().size(); ++i) {
    auto& entry = by_name[frame_label(set.frames()[i])];
    entry.first += self[i];
    entry.second += cumulative[i];
  }
  EXPECT_EQ(by_name["rec"], std::make_pair(uint64_t{4}, uint64_t{4}));  // three frames, one stack
  EXPECT_EQ(by_name["main"], std::make_pair(uint64_t{1}, uint64_t{23}));
  EXPECT_EQ(by_name["work"].second, 20u);
  EXPECT_EQ(by_name["square (inline)"], std::make_pair(uint64_t{12}, uint64_t{12}));
}

TEST(Stacks, FocusIgnoreAndHideKeepTheTotal) {
  Fixture f;
  StackSet set = build_stacks(f.profile, f.symbolizer);
  FocusPattern square("^square$"), rec("rec"), inlined("^(middle|square)$");
  StackSet focused = filter_stacks(set, {.focus = &square});
  EXPECT_EQ(focused.total(), 25u);
  EXPECT_EQ(focused.kept(), 12u);  // whole stacks through square, callers and all
  EXPECT_EQ(f.folded(focused)[1], "__libc_start_main;main;work;outer;middle (inline);square (inline) 10");
  StackSet ignored = filter_stacks(set, {.ignore = &rec});
  EXPECT_EQ(ignored.kept(), 21u);
  // Hiding middle and square merges their stacks into outer's.
  StackSet hidden = filter_stacks(set, {.hide = &inlined});
  EXPECT_EQ(f.folded(hidden), (std::vector<std::string>{"[truncated];work;outer 2",
                                                         "__libc_start_main;main;rec;rec;rec 4",
                                                         "__libc_start_main;main;work 3",
                                                         "__libc_start_main;main;work;outer 15", "main 1"}));
  FocusPattern libc("libc");
  StackSet by_object = filter_stacks(set, {.focus = &libc, .match_objects = true});
  EXPECT_EQ(by_object.kept(), 22u);
}

TEST(Stacks, CallersAndCalleesWithEdgeShares) {
  Fixture f;
  StackSet set = build_stacks(f.profile, f.symbolizer);
  auto relations = call_relations(set, FocusPattern("^work$"));
  ASSERT_EQ(relations.size(), 1u);
  const CallRelations& work = relations[0];
  EXPECT_EQ(work.cumulative, 20u);
  EXPECT_EQ(work.self, 3u);
  ASSERT_EQ(work.callers.size(), 2u);
  EXPECT_EQ(work.callers[0].function, "main");
  EXPECT_EQ(work.callers[0].samples, 18u);
  EXPECT_DOUBLE_EQ(work.callers[0].share, 100.0 * 18 / 20);
  EXPECT_EQ(work.callers[1].function, "[truncated]");
  ASSERT_EQ(work.callees.size(), 1u);
  EXPECT_EQ(work.callees[0].function, "outer");
  EXPECT_EQ(work.callees[0].samples, 17u);  // the truncated stack's edge too
  // Recursion: rec calls rec on one edge, counted once per stack.
  auto rec = call_relations(set, FocusPattern("^rec$"));
  ASSERT_EQ(rec.size(), 1u);
  EXPECT_EQ(rec[0].cumulative, 4u);
  ASSERT_EQ(rec[0].callers.size(), 2u);
  for (const CallEdge& e : rec[0].callers) EXPECT_EQ(e.samples, 4u);
  // An inlining is an edge marked inline.
  auto middle = call_relations(set, FocusPattern("^middle$"));
  ASSERT_EQ(middle.size(), 1u);
  ASSERT_EQ(middle[0].callers.size(), 1u);
  EXPECT_TRUE(middle[0].callers[0].inlined);
  EXPECT_EQ(middle[0].callers[0].function, "outer");
}

TEST(StackViews, RowsCountInlineFramesAndCumulative) {
  Fixture f;
  auto set = std::make_shared<const StackSet>(build_stacks(f.profile, f.symbolizer));
  Report report;
  rows_from_stacks(*set, {}, &report);
  std::map<std::string, const Row*> rows;
  for (const Row& row : report.rows) rows[row.function] = &row;
  ASSERT_TRUE(rows.count("square") && rows.count("middle") && rows.count("outer") && rows.count("main"));
  EXPECT_EQ(rows["square"]->samples, 12u);
  EXPECT_EQ(rows["middle"]->samples, 5u);
  EXPECT_EQ(rows["middle"]->cumulative_samples, 17u);
  EXPECT_EQ(rows["outer"]->samples, 0u);
  EXPECT_EQ(rows["outer"]->cumulative_samples, 17u);
  EXPECT_DOUBLE_EQ(rows["main"]->cumulative_percent, 100.0 * 23 / 25);
  EXPECT_EQ(rows.count("[truncated]"), 0u);  // not a function
  EXPECT_EQ(report.rows[0].function, "square");  // hottest self first
  uint64_t self = 0;
  for (const Row& row : report.rows) self += row.samples;
  EXPECT_EQ(self, set->total());
  EXPECT_EQ(report.samples_shown, self);
  // The CSV's new columns come last, today's keep their order.
  report.rows.resize(1);
  const std::string csv = render_csv(report);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "samples,percent,percent_low,percent_high,function,object,cumulative_samples,cumulative_percent,"
            "observations");
  EXPECT_NE(csv.find(",12,48.0000,\n"), std::string::npos) << csv;
}

TEST(StackViews, FoldedAndTreeMarkInlineFrames) {
  Fixture f;
  StackSet set = build_stacks(f.profile, f.symbolizer);
  const std::string folded = folded_text(set, {});
  EXPECT_EQ(folded.substr(0, folded.find('\n')),
            "__libc_start_main;main;work;outer;middle (inline);square (inline) 10");
  ReportOptions objects;
  objects.view = View::object;
  objects.folded_objects = true;
  EXPECT_NE(folded_text(build_stacks(f.profile, f.symbolizer, {.inline_frames = false}), objects)
                .find("libc.so.6;app;app;app 15\n"),
            std::string::npos);
  Summary summary;
  summary.samples = set.total();
  const std::string tree = tree_text(set, {}, summary);
  // Under main: depth 5, indented 10; under [truncated]: depth 4.
  EXPECT_NE(tree.find("  40.00%          10            square (inline)\n"), std::string::npos) << tree;
  EXPECT_NE(tree.find("   8.00%           2          square (inline)\n"), std::string::npos) << tree;
}

TEST(Names, VersionsShorteningAndLabels) {
  EXPECT_EQ(drop_symbol_version("__libc_start_main@@GLIBC_2.34"), "__libc_start_main");
  EXPECT_EQ(drop_symbol_version("memcpy@GLIBC_2.2.5"), "memcpy");
  EXPECT_EQ(drop_symbol_version("plain"), "plain");
  EXPECT_EQ(drop_symbol_version("operator@(int)"), "operator@(int)");  // not a version
  const std::string name =
      "std::_Rb_tree<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >, "
      "std::pair<int, int> >::_M_insert_unique(std::pair<int, int>&&) const";
  EXPECT_EQ(shorten_name(name, 72), "std::_Rb_tree::_M_insert_unique");
  EXPECT_EQ(shorten_name("short(int)", 72), "short(int)");  // fits: as it is
  EXPECT_EQ(shorten_name("std::vector<int>::operator[](unsigned long)", 25), "std::vector::operator[]");
  EXPECT_EQ(shorten_name("a::operator<<(std::ostream&, int)", 11), "…operator<<");  // the end names it
  EXPECT_EQ(shorten_name("(anonymous namespace)::f(int, char)", 25), "(anonymous namespace)::f");
  EXPECT_EQ(frame_label(StackFrame{"f", "f", "o", "", 0, true}), "f (inline)");
}

// Two profiles drawn from one distribution: a test at level alpha calls
// about alpha of the functions changed, and the exact test at small
// counts no more.
TEST(Diff, SameDistributionIsCalledChangedAtMostAlpha) {
  const int kFunctions = 400, kTrials = 5;
  const double alpha = 0.05;
  std::vector<double> weights;
  for (int i = 1; i <= kFunctions; ++i) weights.push_back(1.0 / i);  // Zipf: many small counts
  std::mt19937_64 random(22);
  size_t rows = 0, significant = 0;
  for (int trial = 0; trial < kTrials; ++trial) {
    std::discrete_distribution<int> pick(weights.begin(), weights.end());
    std::vector<uint64_t> a(kFunctions), b(kFunctions);
    const uint64_t n1 = 20000, n2 = 30000;  // two durations
    for (uint64_t i = 0; i < n1; ++i) ++a[pick(random)];
    for (uint64_t i = 0; i < n2; ++i) ++b[pick(random)];
    for (int i = 0; i < kFunctions; ++i) {
      if (a[i] + b[i] == 0) continue;
      double z;
      ++rows;
      significant += diff_test(a[i], n1, b[i], n2, &z) < alpha;
    }
  }
  // Under the null each row is called at most alpha of the time; the count
  // over `rows` rows stays within three binomial standard deviations.
  const double bound = alpha * rows + 3 * std::sqrt(rows * alpha * (1 - alpha));
  std::fprintf(stderr, "same distribution: %zu of %zu rows called changed (bound %.1f)\n", significant, rows, bound);
  EXPECT_LE(significant, bound) << significant << " of " << rows;
  EXPECT_GT(significant, 0u);  // the test is not simply blind
}

TEST(Diff, ExactAtSmallCountsAndZAbove) {
  double z;
  // 0 -> 4 of equal totals: the 4 samples all fell in new, or all in
  // base: p = 2 C(1000,4) / C(2000,4), about 1/8.
  const double all_in_one = (1000.0 * 999 * 998 * 997) / (2000.0 * 1999 * 1998 * 1997);
  EXPECT_NEAR(diff_test(0, 1000, 4, 1000, &z), 2 * all_in_one, 1e-9);
  EXPECT_NEAR(z, 2.0, 0.01);
  EXPECT_NEAR(diff_test(5, 1000, 5, 1000, &z), 1.0, 1e-9);  // every outcome is as likely or less
  // Above the limit, the z test: |z| = 1.96 is p = 0.05.
  const uint64_t k = kExactTestLimit;
  const double p = diff_test(k, 100000, k + 90, 100000, &z);
  EXPECT_NEAR(p, std::erfc(std::fabs(z) / std::sqrt(2.0)), 1e-12);
  EXPECT_EQ(diff_test(1, 0, 1, 10, &z), 1.0);
}

TEST(Diff, StacksGiveSecondsAndCumulative) {
  Fixture base, changed;
  changed.profile.samples[0].count = 200;  // square: 10 -> 200 samples
  Summary sb, sn;
  sb.period_ns = sn.period_ns = base.profile.period_ns;
  sb.files = {"base.pb.gz"};
  sn.files = {"new.pb.gz"};
  Diff d = diff_stacks(build_stacks(base.profile, base.symbolizer), build_stacks(changed.profile, changed.symbolizer),
                       sb, sn);
  ASSERT_FALSE(d.rows.empty());
  const DiffRow& top = d.rows[0];
  EXPECT_EQ(top.function, "square");
  EXPECT_EQ(top.delta_samples, 190);
  EXPECT_DOUBLE_EQ(top.delta_seconds, 190 * 1e-3);
  EXPECT_TRUE(top.significant);
  auto main_row = std::find_if(d.rows.begin(), d.rows.end(), [](const DiffRow& r) { return r.function == "main"; });
  ASSERT_NE(main_row, d.rows.end());
  EXPECT_EQ(main_row->base_cumulative, 23u);
  EXPECT_EQ(main_row->new_cumulative, 213u);
  const std::string json = render_diff_json(d);
  EXPECT_NE(json.find("\"files\":[\"base.pb.gz\"]"), std::string::npos);
  EXPECT_NE(json.find("\"files\":[\"new.pb.gz\"]"), std::string::npos);
}

// The rate test of two Poisson counts, as R's poisson.test gives it.
TEST(Diff, PoissonRateTestConditionsOnTheSum) {
  double z;
  // 0 -> 4 over equal exposures: all four fell on one side, p = 2/16.
  EXPECT_NEAR(poisson_rate_test(0, 1, 4, 1, &z), 0.125, 1e-12);
  EXPECT_GT(z, 0);
  // poisson.test(c(10, 10), c(1, 2)): k2 = 10 of 20 at q = 2/3, p = 0.15234
  // (sum of dbinom(0:20, 20, 2/3) no likelier than dbinom(10, 20, 2/3))
  EXPECT_NEAR(poisson_rate_test(10, 1, 10, 2, &z), 0.152342, 1e-6);
  EXPECT_LT(z, 0);  // fewer than the 13.3 equal rates expect
  EXPECT_NEAR(poisson_rate_test(7, 1, 7, 1, &z), 1.0, 1e-12);
  // Above the exact limit, the normal approximation.
  const double p = poisson_rate_test(1000, 1, 1100, 1, &z);
  EXPECT_NEAR(z, 50 / std::sqrt(2100 * 0.25), 1e-9);  // (1100 - 2100/2) / sqrt(2100/4)
  EXPECT_NEAR(p, std::erfc(std::fabs(z) / std::sqrt(2.0)), 1e-12);
  EXPECT_EQ(poisson_rate_test(3, 0, 4, 1, &z), 1.0);  // no exposure: no test
}

TEST(Diff, BenjaminiHochbergAsRsPAdjust) {
  // p.adjust(c(0.01, 0.04, 0.03, 0.005), "BH") = 0.02 0.04 0.04 0.02
  const std::vector<double> q = benjamini_hochberg({0.01, 0.04, 0.03, 0.005});
  ASSERT_EQ(q.size(), 4u);
  EXPECT_NEAR(q[0], 0.02, 1e-12);
  EXPECT_NEAR(q[1], 0.04, 1e-12);
  EXPECT_NEAR(q[2], 0.04, 1e-12);
  EXPECT_NEAR(q[3], 0.02, 1e-12);
  EXPECT_NEAR(benjamini_hochberg({0.9, 0.8})[0], 0.9, 1e-12);  // never above 1, monotone
  EXPECT_TRUE(benjamini_hochberg({}).empty());
}

}  // namespace
}  // namespace profiling::report
