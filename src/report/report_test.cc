// Aggregation, statistics, merging, diffing, input detection and rendering on
// in-memory profiles (no ELF needed: addresses outside every object).
#include "report/report.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <vector>

#include <re2/re2.h>

#include "report/diff.h"
#include "report/input.h"
#include "report/model.h"
#include "report/render.h"

namespace profiling::report {
namespace {

TEST(Wilson, MatchesPublishedValues) {
  // 50 of 100: 95 % Wilson interval 40.38 % - 59.62 % (Newcombe 1998, method 3).
  Interval half = wilson_interval(50, 100);
  EXPECT_NEAR(half.low, 40.383, 0.01);
  EXPECT_NEAR(half.high, 59.617, 0.01);
  // 0 of 10: the interval is not degenerate, [0, 27.75 %].
  Interval none = wilson_interval(0, 10);
  EXPECT_DOUBLE_EQ(none.low, 0);
  EXPECT_NEAR(none.high, 27.75, 0.01);
  Interval all = wilson_interval(10, 10);
  EXPECT_NEAR(all.low, 72.25, 0.01);
  EXPECT_DOUBLE_EQ(all.high, 100);
  // The interval narrows as 1/sqrt(n).
  Interval big = wilson_interval(5000, 10000);
  EXPECT_NEAR((big.high - big.low) / (half.high - half.low), 0.1, 0.005);
}

// Issue 22: at 4 kHz on a 250 Hz kernel each signal counts 16 periods.
// 300 of 1,000 signals are 4,800 of 16,000 counts: the share is 30 % either
// way, but its interval is that of 1,000 draws, 4x as wide as the one that
// takes the 16,000 counts for draws (sqrt(16)).
TEST(Wilson, WeightedCountsTakeTheirWidthFromTheObservations) {
  const Interval honest = share_interval(4800, 300, 16000, 1000);
  const Interval of_draws = wilson_interval(300, 1000);
  const Interval of_counts = wilson_interval(4800, 16000);
  EXPECT_NEAR(honest.low, of_draws.low, 1e-9);
  EXPECT_NEAR(honest.high, of_draws.high, 1e-9);
  EXPECT_NEAR((honest.high - honest.low) / (of_counts.high - of_counts.low), 4.0, 0.05);
  // Without observations, or one per count: the counts' interval, exactly.
  EXPECT_EQ(share_interval(4800, 0, 16000, 0).low, of_counts.low);
  EXPECT_EQ(share_interval(4800, 4800, 16000, 16000).high, of_counts.high);
  // A row of heavier draws than the rest (its signals came late) is
  // noisier than its share of the draws says: 300 draws of 16 among 3,700
  // draws of 1 (8,500 counts in 4,000 draws).
  const Interval heavy = share_interval(4800, 300, 8500, 4000);
  const double p = 4800.0 / 8500;
  const double variance = ((1 - p) * (1 - p) * 4800.0 * 4800 / 300 + p * p * 3700.0 * 3700 / 3700) / (8500.0 * 8500);
  EXPECT_NEAR(share_variance(4800, 300, 8500, 4000), variance, 1e-12);
  const Interval expected = wilson_share_interval(p, p * (1 - p) / variance);
  EXPECT_NEAR(heavy.low, expected.low, 1e-9);
  EXPECT_NEAR(heavy.high, expected.high, 1e-9);
  EXPECT_GT(heavy.high - heavy.low, wilson_interval(4800, 8500).high - wilson_interval(4800, 8500).low);
  // Measured, not sampled ([unsampled: ...] rows have no draws): no noise
  // of their own, the interval stays finite.
  const Interval measured = share_interval(100, 0, 1100, 1000);
  EXPECT_LE(measured.low, 100.0 * 100 / 1100);
  EXPECT_GE(measured.high, 100.0 * 100 / 1100);
}

format::Profile profile_at(uint64_t base, uint64_t period_ns, std::vector<std::pair<uint64_t, uint64_t>> offsets) {
  format::Profile p;
  p.period_ns = period_ns;
  p.mappings.push_back({base, base + 0x10000, 0x1000, "/nonexistent/prog", "abcd"});
  for (auto [offset, count] : offsets) p.samples.push_back({base + offset, count});
  return p;
}

TEST(Merge, SumsObjectsMatchedByBuildIdWhereverTheyWereLoaded) {
  LoadedProfile a{"a", InputKind::pprof, profile_at(0x555500000000, 1000, {{0x10, 5}, {0x20, 1}})};
  LoadedProfile b{"b", InputKind::pprof, profile_at(0x7f0000000000, 1000, {{0x10, 7}})};
  b.profile.mappings[0].path = "/elsewhere/prog";  // same build id: same object
  format::Profile merged = merge_profiles({a, b});
  ASSERT_EQ(merged.mappings.size(), 1u);
  EXPECT_EQ(merged.period_ns, 1000u);
  EXPECT_EQ(merged.total_count(), 13u);
  ASSERT_EQ(merged.samples.size(), 2u);
  EXPECT_EQ(merged.samples[0].address, 0x555500000010u);
  EXPECT_EQ(merged.samples[0].count, 12u);
}

// Stacks move with their object: callers are relocated like leaves, and
// identical stacks of two runs (two ASLR layouts) are one stack, summed.
TEST(Merge, SumsIdenticalStacksWhereverTheObjectWasLoaded) {
  auto with_stacks = [](uint64_t base) {
    format::Profile p = profile_at(base, 1000, {});
    const uint32_t deep = p.stacks.intern(std::vector<uint64_t>{base + 0x40, base + 0x80}, false);
    const uint32_t cut = p.stacks.intern(std::vector<uint64_t>{base + 0x40}, true);
    p.samples = {{base + 0x10, 5, 0, deep}, {base + 0x10, 2, 0, cut}, {base + 0x20, 1, 0, 0}};
    return p;
  };
  LoadedProfile a{"a", InputKind::pprof, with_stacks(0x555500000000)};
  LoadedProfile b{"b", InputKind::pprof, with_stacks(0x7f0000000000)};
  LoadedProfile c{"c", InputKind::pprof, profile_at(0x7f0000000000, 1000, {{0x10, 4}})};  // no stacks
  for (bool moved : {false, true}) {
    std::vector<LoadedProfile> inputs = {a, b, c};
    format::Profile merged = moved ? merge_profiles(std::move(inputs)) : merge_profiles(inputs);
    ASSERT_EQ(merged.mappings.size(), 1u);
    EXPECT_EQ(merged.total_count(), 20u);
    EXPECT_EQ(merged.stacks.size(), 2u);
    std::map<std::pair<std::vector<uint64_t>, bool>, uint64_t> by_stack;
    for (const format::Sample& s : merged.samples) {
      const auto callers = merged.stacks.callers(s.stack);
      std::vector<uint64_t> frames = {s.address};
      frames.insert(frames.end(), callers.begin(), callers.end());
      by_stack[{frames, merged.stacks.truncated(s.stack)}] += s.count;
    }
    const uint64_t base = 0x555500000000;
    std::map<std::pair<std::vector<uint64_t>, bool>, uint64_t> expected = {
        {{{base + 0x10, base + 0x40, base + 0x80}, false}, 10},
        {{{base + 0x10, base + 0x40}, true}, 4},
        {{{base + 0x20}, false}, 2},
        {{{base + 0x10}, false}, 4}};
    EXPECT_EQ(by_stack, expected);
  }
}

TEST(Merge, SamplesOfSeveralProcessesKeepTheirPid) {
  LoadedProfile a{"a", InputKind::pprof, profile_at(0x555500000000, 1000, {{0x10, 5}})};
  LoadedProfile b{"b", InputKind::pprof, profile_at(0x7f0000000000, 1000, {{0x10, 7}, {0x20, 2}})};
  a.profile.pid = 100;
  b.profile.pid = 200;
  format::Profile merged = merge_profiles({a, b});
  EXPECT_EQ(merged.pid, 0);
  EXPECT_EQ(merged.samples, (std::vector<format::Sample>{
                                {0x555500000010, 5, 100}, {0x555500000010, 7, 200}, {0x555500000020, 2, 200}}));
  // Merging such a sum again keeps the pids it holds.
  LoadedProfile sum{"sum", InputKind::pprof, merged};
  LoadedProfile c{"c", InputKind::pprof, profile_at(0x555500000000, 1000, {{0x10, 1}})};
  c.profile.pid = 300;
  format::Profile again = merge_profiles({sum, c});
  ASSERT_EQ(again.samples.size(), 4u);
  EXPECT_EQ(again.samples[0].pid, 100);
  EXPECT_EQ(again.samples[2].pid, 300);
  // One input keeps its samples as they were.
  EXPECT_EQ(merge_profiles({a}).samples, a.profile.samples);
}

TEST(Merge, MovesAnOtherObjectThatOverlaps) {
  LoadedProfile a{"a", InputKind::pprof, profile_at(0x1000000, 1000, {{0x10, 5}})};
  LoadedProfile b{"b", InputKind::pprof, profile_at(0x1000000, 1000, {{0x10, 7}})};
  b.profile.mappings[0].build_id = "ef01";  // another object at the same place
  format::Profile merged = merge_profiles({a, b});
  ASSERT_EQ(merged.mappings.size(), 2u);
  EXPECT_GE(merged.mappings[1].start, merged.mappings[0].limit);
  ASSERT_EQ(merged.samples.size(), 2u);
  EXPECT_TRUE(merged.mappings[0].contains(merged.samples[0].address));
  EXPECT_TRUE(merged.mappings[1].contains(merged.samples[1].address));
  EXPECT_EQ(merged.samples[1].count, 7u);
}

TEST(Merge, NamesFromTheFilesMoveWithTheirObjects) {
  LoadedProfile a{"a", InputKind::pprof, profile_at(0x1000000, 1000, {{0x10, 5}})};
  LoadedProfile b{"b", InputKind::pprof, profile_at(0x1000000, 1000, {{0x10, 7}, {0x20, 1}})};
  b.profile.mappings[0].build_id = "ef01";  // another object at the same place: it moves
  a.profile.frames[0x1000010] = {{"in_a", "in_a", "", 0}};
  b.profile.frames[0x1000010] = {{"in_b", "in_b", "b.c", 4}};
  format::Profile merged = merge_profiles({a, b});
  ASSERT_EQ(merged.mappings.size(), 2u);
  uint64_t moved = merged.mappings[1].start + 0x10;
  ASSERT_NE(merged.frames_for(0x1000010), nullptr);
  EXPECT_EQ(merged.frames_for(0x1000010)->front().function, "in_a");
  ASSERT_NE(merged.frames_for(moved), nullptr);
  EXPECT_EQ(merged.frames_for(moved)->front().function, "in_b");
  EXPECT_EQ(merged.frames.size(), 2u);  // b's unnamed 0x20 stays unnamed
}

TEST(Merge, RefusesDifferentSamplingPeriods) {
  LoadedProfile a{"fast.pb.gz", InputKind::pprof, profile_at(0x1000, 100000, {{0x10, 5}})};
  LoadedProfile b{"slow.pb.gz", InputKind::pprof, profile_at(0x1000, 1000000, {{0x10, 5}})};
  try {
    merge_profiles({a, b});
    FAIL() << "merged profiles of different rates";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "slow.pb.gz");
    EXPECT_NE(std::string(e.what()).find("fast.pb.gz"), std::string::npos);
  }
}

TEST(Input, DetectsTypesByContentAndRefusesForeignBytes) {
  EXPECT_EQ(detect_input_kind(std::string("\x1f\x8b\x08\x00", 4), "x"), InputKind::pprof);
  EXPECT_EQ(detect_input_kind("gmon\x01\0\0\0", "x"), InputKind::gmon);
  EXPECT_EQ(detect_input_kind(std::string("PROFRAW\n\1\0\0\0", 12), "x"), InputKind::profraw);
  try {
    decode_profile("#!/bin/sh\necho hello\n", "script.sh");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "script.sh");
    EXPECT_NE(std::string(e.what()).find("not a profile"), std::string::npos);
  }
  EXPECT_THROW(decode_profile("", "empty"), InputError);
  // A gzip header cut short is a truncated pprof, not a crash.
  EXPECT_THROW(decode_profile(std::string("\x1f\x8b\x08\x00\x00", 5), "cut.pb.gz"), InputError);
}

TEST(Input, RandomBytesAreRefusedNeverCrash) {
  // Foreign bytes behind each magic: every reader must answer with an
  // InputError naming the file (the fuzzers go further; this runs in ctest).
  std::mt19937 random(12345);
  const std::string prefixes[] = {"", std::string("\x1f\x8b\x08\x00", 4), "gmon\x01\0\0\0",
                                  std::string("PROFRAW\n\1\0\0\0\xb0\0\0\0", 16), std::string("\x0a\x04", 2)};
  size_t refused = 0;
  for (int round = 0; round < 2000; ++round) {
    std::string bytes = prefixes[round % 5];
    size_t length = random() % 600;
    for (size_t i = 0; i < length; ++i) bytes += static_cast<char>(random());
    try {
      decode_profile(bytes, "random.bin", "/nonexistent/a.out");
    } catch (const InputError& e) {
      EXPECT_EQ(e.file(), "random.bin");
      ++refused;
    }
  }
  EXPECT_GT(refused, 1900u);
}

// Profiles of no readable object: every address is [unknown] in its mapping.
SymbolizedProfile symbolized_of(const format::Profile& p, Symbolizer& symbolizer) {
  return symbolize_profile(p, symbolizer, false);
}

// A report as profil report builds it: the model (leaves and stacks), then
// the rows.
Report report_of(const format::Profile& p, Symbolizer& symbolizer, const ReportOptions& options,
                 const std::vector<std::string>& files = {}) {
  const Model model = build_model(p, symbolizer, options, {.stacks = true});
  return build_report(model.symbolized, options, files, model.stacks);
}

TEST(Report, ObjectViewTopMinPercentAndFocus) {
  format::Profile p;
  p.period_ns = 1'000'000;
  p.mappings.push_back({0x1000, 0x2000, 0, "/nonexistent/liba.so", ""});
  p.mappings.push_back({0x3000, 0x4000, 0, "/nonexistent/libb.so", ""});
  p.mappings.push_back({0x5000, 0x6000, 0, "[vdso]", ""});
  p.samples = {{0x1100, 60}, {0x1200, 10}, {0x3100, 25}, {0x5100, 5}};
  Symbolizer symbolizer;
  SymbolizedProfile s = symbolized_of(p, symbolizer);
  ReportOptions options;
  options.view = View::object;
  Report all = build_report(s, options, {"x"});
  ASSERT_EQ(all.rows.size(), 3u);
  EXPECT_EQ(all.rows[0].object, "liba.so");
  EXPECT_EQ(all.rows[0].samples, 70u);
  EXPECT_DOUBLE_EQ(all.summary.cpu_seconds, 0.1);
  EXPECT_DOUBLE_EQ(all.summary.rate_hz, 1000);
  options.min_percent = 10;
  EXPECT_EQ(build_report(s, options, {}).rows.size(), 2u);
  options.min_percent = 0;
  options.top = 1;
  EXPECT_EQ(build_report(s, options, {}).rows.size(), 1u);
  options.top = 0;
  options.focus.emplace("libb");
  Report focused = build_report(s, options, {});
  ASSERT_EQ(focused.rows.size(), 1u);
  EXPECT_DOUBLE_EQ(focused.rows[0].percent, 25);  // still a share of all samples
}

TEST(Render, CsvJsonFoldedAndText) {
  format::Profile p;
  p.period_ns = 1'000'000;
  p.mappings.push_back({0x1000, 0x2000, 0, "/nonexistent/lib,a.so", ""});
  p.samples = {{0x1100, 3}, {0x1200, 1}};
  Symbolizer symbolizer;
  SymbolizedProfile s = symbolized_of(p, symbolizer);
  Report r = build_report(s, {}, {"in.pb.gz"});
  EXPECT_EQ(render_csv(r),
            "samples,percent,percent_low,percent_high,function,object,cumulative_samples,cumulative_percent,"
            "observations\n"
            "4,100.0000,51.0109,100.0000,[unknown],\"lib,a.so\",4,100.0000,\n");  // no observations recorded
  EXPECT_EQ(render_folded(report_of(p, symbolizer, {})), "[unknown] 4\n");
  std::string json = render_json(r);
  EXPECT_NE(json.find("\"schema\":\"profil-report/1\""), std::string::npos);
  EXPECT_NE(json.find("\"percent_low\":51.0109"), std::string::npos);
  std::string text = render_text(r, false);
  EXPECT_NE(text.find("4 samples at 1000 Hz (1000000 ns each) = 0.004 s of CPU time"), std::string::npos);
  EXPECT_EQ(text.find("\x1b["), std::string::npos);
  EXPECT_NE(render_text(r, true).find("\x1b["), std::string::npos);
}

// Folded stacks: root first, identical name chains summed, a truncated
// stack under "[truncated]", --focus on any frame, objects by option.
// An app (leaf 0x1100, a 0x1200, main 0x1300) and a libc.so (qsort 0x3100)
// named by the file's frames, with no samples yet.
format::Profile app_and_libc() {
  format::Profile p;
  p.period_ns = 1'000'000;
  p.mappings.push_back({0x1000, 0x2000, 0, "/nonexistent/app", ""});
  p.mappings.push_back({0x3000, 0x4000, 0, "/nonexistent/libc.so", ""});
  for (auto [address, name] : {std::pair<uint64_t, const char*>{0x1100, "leaf"}, {0x1200, "a"}, {0x1300, "main"},
                               {0x3100, "qsort"}})
    p.frames[address] = {{name, name, "", 0}};
  return p;
}

TEST(Render, FoldedStacksRootFirst) {
  format::Profile p = app_and_libc();
  p.frames[0x1101] = p.frames[0x1100];
  const uint32_t from_a = p.stacks.intern(std::vector<uint64_t>{0x1200, 0x1300}, false);
  const uint32_t via_qsort = p.stacks.intern(std::vector<uint64_t>{0x3100, 0x1200, 0x1300}, false);
  const uint32_t cut = p.stacks.intern(std::vector<uint64_t>{0x1200}, true);
  p.samples = {{0x1100, 5, 0, from_a}, {0x1101, 2, 0, from_a}, {0x1100, 3, 0, via_qsort},
               {0x1100, 1, 0, cut},    {0x1300, 4, 0, 0},      {0x5000, 1, 0, from_a}};
  Symbolizer symbolizer;
  Report r = report_of(p, symbolizer, {});
  EXPECT_EQ(render_folded(r),
            "main;a;leaf 7\n"
            "main 4\n"
            "main;a;qsort;leaf 3\n"
            "[truncated];a;leaf 1\n"  // ties in the order the samples met them
            "main;a;[unknown] 1\n");
  ReportOptions options;
  options.focus.emplace("^qsort$");
  options.folded_objects = true;
  r = report_of(p, symbolizer, options);
  EXPECT_EQ(render_folded(r), "app`main;app`a;libc.so`qsort;app`leaf 3\n");
  options = {};
  options.view = View::object;
  options.top = 2;
  r = report_of(p, symbolizer, options);
  EXPECT_EQ(render_folded(r), "app;app;app 7\napp 4\n");
  // The flat views are the leaves, as before stacks.
  const SymbolizedProfile s = symbolized_of(p, symbolizer);
  r = build_report(s, {}, {});
  ASSERT_GE(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[0].function, "leaf");
  EXPECT_EQ(r.rows[0].samples, 11u);
  EXPECT_EQ(r.rows[1].function, "main");
  EXPECT_EQ(r.rows[1].samples, 4u);
}

// --sort (issue 35): by self (the default), total or name, before --top;
// the flat views of leaves alone as well.
TEST(Report, RowsSortBySelfTotalOrName) {
  format::Profile p = app_and_libc();
  const uint32_t from_a = p.stacks.intern(std::vector<uint64_t>{0x1200, 0x1300}, false);
  const uint32_t via_qsort = p.stacks.intern(std::vector<uint64_t>{0x3100, 0x1200, 0x1300}, false);
  p.samples = {{0x1100, 5, 0, from_a}, {0x1100, 3, 0, via_qsort}, {0x1300, 4, 0, 0}, {0x3100, 1, 0, from_a}};
  Symbolizer symbolizer;
  auto order = [&](RowOrder sort, size_t top = 0) {
    ReportOptions options;
    options.sort = sort;
    options.top = top;
    std::string out;
    for (const Row& row : report_of(p, symbolizer, options).rows)
      out += row.function + "=" + std::to_string(row.samples) + "/" + std::to_string(row.cumulative_samples) + " ";
    return out;
  };
  // leaf 8 self; main 4 self, 13 total; a and qsort call only (0 self).
  EXPECT_EQ(order(RowOrder::self), "leaf=8/8 main=4/13 qsort=1/4 a=0/9 ");
  EXPECT_EQ(order(RowOrder::total), "main=4/13 a=0/9 leaf=8/8 qsort=1/4 ");
  EXPECT_EQ(order(RowOrder::total, 2), "main=4/13 a=0/9 ");
  EXPECT_EQ(order(RowOrder::name), "a=0/9 leaf=8/8 main=4/13 qsort=1/4 ");
  // The object view by name: base names, as shown.
  ReportOptions options;
  options.view = View::object;
  options.sort = RowOrder::name;
  const Report objects = report_of(p, symbolizer, options);
  ASSERT_EQ(objects.rows.size(), 2u);
  EXPECT_EQ(objects.rows[0].object, "app");
  EXPECT_EQ(objects.rows[1].object, "libc.so");
  // Leaves alone (no stacks): self is total; name orders them too.
  options = {};
  options.sort = RowOrder::name;
  const Report flat = build_report(symbolized_of(p, symbolizer), options, {});
  std::string names;
  for (const Row& row : flat.rows) names += row.function + " ";
  EXPECT_EQ(names, "leaf main qsort ");
  RowOrder parsed = RowOrder::self;
  EXPECT_TRUE(parse_row_order("total", &parsed));
  EXPECT_EQ(parsed, RowOrder::total);
  EXPECT_FALSE(parse_row_order("cum", &parsed));
}

// The stackcollapse grammar flamegraph.pl, inferno and speedscope parse:
// each line is frames joined by ';' (none empty, none holding ';' or a
// newline), one space, a decimal count. Names with ';', spaces and
// newlines keep every line in it.
TEST(Render, FoldedLinesKeepTheStackcollapseGrammar) {
  format::Profile p;
  p.period_ns = 1'000'000;
  p.mappings.push_back({0x1000, 0x2000, 0, "/nonexistent/app", ""});
  p.frames[0x1100] = {{"std::map<int; int>::at(int) const", "", "", 0}};
  p.frames[0x1200] = {{"two\nlines", "", "", 0}};
  p.frames[0x1300] = {{"operator()", "", "", 0}};
  const uint32_t stack = p.stacks.intern(std::vector<uint64_t>{0x1200, 0x1300}, true);
  p.samples = {{0x1100, 3, 0, stack}, {0x1200, 2, 0, 0}};
  Symbolizer symbolizer;
  const std::string folded = render_folded(report_of(p, symbolizer, {}));
  const RE2 line("([^; \n][^;\n]*;)*[^; \n][^;\n]* [0-9]+");
  size_t lines = 0;
  for (size_t at = 0; at < folded.size();) {
    const size_t end = folded.find('\n', at);
    ASSERT_NE(end, std::string::npos);
    EXPECT_TRUE(RE2::FullMatch(folded.substr(at, end - at), line)) << folded.substr(at, end - at);
    at = end + 1;
    ++lines;
  }
  EXPECT_EQ(lines, 2u);
  EXPECT_EQ(folded, "[truncated];operator();two lines;std::map<int: int>::at(int) const 3\ntwo lines 2\n");
}

TEST(Diff, TheFunctionThatGainedShareComesFirst) {
  format::Profile base, changed;
  for (format::Profile* p : {&base, &changed}) {
    p->period_ns = 1000;
    p->mappings.push_back({0x1000, 0x2000, 0, "/nonexistent/a", ""});
    p->mappings.push_back({0x3000, 0x4000, 0, "/nonexistent/b", ""});
    p->mappings.push_back({0x5000, 0x6000, 0, "/nonexistent/c", ""});
  }
  base.samples = {{0x1100, 400}, {0x3100, 300}, {0x5100, 300}};
  changed.samples = {{0x1100, 400}, {0x3100, 900}, {0x5100, 300}};
  Symbolizer symbolizer;
  Diff d = diff_profiles(symbolized_of(base, symbolizer), symbolized_of(changed, symbolizer));
  ASSERT_EQ(d.rows.size(), 3u);
  EXPECT_EQ(d.rows[0].object, "b");
  EXPECT_GT(d.rows[0].z, 10);
  EXPECT_NEAR(d.rows[0].delta, 100.0 * 900 / 1600 - 30, 1e-9);
  EXPECT_LT(d.rows[0].p_value, 1e-9);
  // Then the losers, the most significant loss first: a fell from 40 % to
  // 25 %, c from 30 % to 18.75 %.
  EXPECT_EQ(d.rows[1].object, "a");
  EXPECT_EQ(d.rows[2].object, "c");
  EXPECT_LT(d.rows[1].z, d.rows[2].z);
  EXPECT_LT(d.rows[2].z, 0);
}

// Two profiles of one program, drawn from one distribution over two wall
// durations (2 s and 3 s at one rate): every difference is noise. Of 400
// functions (Zipf: many small counts) about 5 % have p < 0.05 in each
// test; the false discovery rate correction leaves a trial with any
// "changed" row at most about 5 % of the time (under the complete null,
// Benjamini-Hochberg at level alpha bounds P(any) by alpha).
TEST(Diff, SameDistributionGivesNoChangedRowsAfterFdr) {
  const int kFunctions = 400, kTrials = 20;
  std::vector<double> weights;
  for (int i = 1; i <= kFunctions; ++i) weights.push_back(1.0 / i);
  std::mt19937_64 random(2222);
  std::discrete_distribution<int> pick(weights.begin(), weights.end());
  size_t raw = 0, rows = 0, trials_with_any = 0;
  for (int trial = 0; trial < kTrials; ++trial) {
    format::Profile base, changed;
    for (format::Profile* p : {&base, &changed}) {
      p->period_ns = 1'000'000;
      for (int i = 0; i < kFunctions; ++i)
        p->mappings.push_back({0x10000u * (i + 1), 0x10000u * (i + 1) + 0x1000, 0,
                               "/nonexistent/f" + std::to_string(i), ""});
    }
    base.duration_ns = 2'000'000'000;
    changed.duration_ns = 3'000'000'000;
    std::poisson_distribution<uint64_t> base_n(20000), new_n(30000);
    for (auto [p, n] : {std::pair{&base, base_n(random)}, std::pair{&changed, new_n(random)}}) {
      std::vector<uint64_t> counts(kFunctions);
      for (uint64_t s = 0; s < n; ++s) ++counts[pick(random)];
      for (int i = 0; i < kFunctions; ++i)
        if (counts[i]) p->samples.push_back({0x10000u * (i + 1) + 0x10, counts[i]});
    }
    Symbolizer symbolizer;
    const Diff d = diff_profiles(symbolized_of(base, symbolizer), symbolized_of(changed, symbolizer),
                                 {.per_wall_second = true});
    bool any = false;
    for (const DiffRow& r : d.rows) {
      ++rows;
      raw += (r.p_value < kDiffLevel) + (r.rate_p_value < kDiffLevel);
      any = any || r.significant || r.rate_significant || r.cumulative_significant;
    }
    trials_with_any += any;
  }
  std::fprintf(stderr, "same distribution: %zu of %zu tests at p < 0.05; %zu of %d trials with a changed row\n", raw,
               2 * rows, trials_with_any, kTrials);
  // Uncorrected, the noise is called changed (Fisher's test is
  // conservative at small counts, so below 5 %, but far from none).
  EXPECT_GT(raw, rows / 100);
  // Corrected: three families (share, cumulative, seconds) at 5 % each
  // allow ~15 % of trials; P(Bin(20, 0.15) > 7) < 0.002.
  EXPECT_LE(trials_with_any, 7u);
}

// The seconds test sees what the share test cannot: every function twice
// as slow keeps its share.
TEST(Diff, RateTestSeesSecondsWhenSharesStay) {
  format::Profile base, changed;
  for (format::Profile* p : {&base, &changed}) {
    p->period_ns = 1'000'000;
    p->mappings.push_back({0x1000, 0x2000, 0, "/nonexistent/a", ""});
    p->mappings.push_back({0x3000, 0x4000, 0, "/nonexistent/b", ""});
  }
  base.samples = {{0x1100, 300}, {0x3100, 300}};
  changed.samples = {{0x1100, 600}, {0x3100, 600}};
  Symbolizer symbolizer;
  const Diff d = diff_profiles(symbolized_of(base, symbolizer), symbolized_of(changed, symbolizer));
  ASSERT_EQ(d.rows.size(), 2u);
  for (const DiffRow& r : d.rows) {
    EXPECT_FALSE(r.significant) << r.object;
    EXPECT_TRUE(r.rate_significant) << r.object;
    EXPECT_NEAR(r.rate_z, 10, 1e-9);  // (600 - 450) / sqrt(900/4)
    EXPECT_LT(r.rate_q_value, 1e-9);
  }
  const std::string json = render_diff_json(d);
  EXPECT_NE(json.find("\"rate_significant\":true"), std::string::npos) << json;
  EXPECT_NE(json.find("\"rate_per\":\"run\""), std::string::npos) << json;
}

// Issue 22: a change of share that is significant as counts is noise as
// draws when each draw is 16 counts. 420 -> 480 of 1,000 samples each side
// is z ~ 2.7 of counts; of 16-count draws (26 -> 30 of 62.5) it is z ~ 0.7.
// The rate test is of draws too, each side's exposure divided by its
// weight: the seconds are the same.
TEST(Diff, TestsAreOfObservationsWhereBothProfilesHaveThem) {
  auto make = [](uint64_t a, uint64_t b, uint64_t weight) {
    format::Profile p;
    p.period_ns = 250'000;  // 4 kHz
    p.has_observations = true;
    p.mappings.push_back({0x1000, 0x2000, 0, "/nonexistent/a", ""});
    p.mappings.push_back({0x3000, 0x4000, 0, "/nonexistent/b", ""});
    p.samples = {{0x1100, a * weight}, {0x3100, b * weight}};
    p.samples[0].observations = a;
    p.samples[1].observations = b;
    return p;
  };
  Symbolizer symbolizer;
  // As counts (1 count a draw): significant.
  const Diff counted = diff_profiles(symbolized_of(make(420, 580, 1), symbolizer),
                                     symbolized_of(make(480, 520, 1), symbolizer));
  ASSERT_EQ(counted.rows.size(), 2u);
  EXPECT_LT(counted.rows[0].p_value, 0.01);
  // The same counts in draws of 16: within the noise, the rate test too.
  const Diff drawn = diff_profiles(symbolized_of(make(26, 36, 16), symbolizer),
                                   symbolized_of(make(30, 32, 16), symbolizer));
  for (const DiffRow& r : drawn.rows) {
    EXPECT_GT(r.p_value, 0.2) << r.object;
    EXPECT_GT(r.rate_p_value, 0.2) << r.object;
    EXPECT_GT(r.base_observations, 0u);
  }
  const DiffRow& a = drawn.rows[0].object == "a" ? drawn.rows[0] : drawn.rows[1];
  EXPECT_EQ(a.base_samples, 26u * 16);
  EXPECT_EQ(a.base_observations, 26u);
  EXPECT_EQ(a.new_observations, 30u);
  // The half-width of the change is that of the draws: 4x the counts'.
  const Diff as_counts = diff_profiles(symbolized_of(make(26 * 16, 36 * 16, 1), symbolizer),
                                       symbolized_of(make(30 * 16, 32 * 16, 1), symbolizer));
  const DiffRow& a1 = as_counts.rows[0].object == "a" ? as_counts.rows[0] : as_counts.rows[1];
  EXPECT_NEAR(a.delta_error / a1.delta_error, 4.0, 0.01);
  EXPECT_NE(render_diff_csv(drawn).find(",26,30\n"), std::string::npos) << render_diff_csv(drawn);
}

}  // namespace
}  // namespace profiling::report
