// Stripped code (issue 23): its samples split per function as .eh_frame
// delimits them ("object+0xADDRESS", unnamed_code.h) instead of one
// [unknown] row, and a hint naming the object, its build id and what would
// name it (missing_symbols.h). On the report fixture stripped here
// (report.cmake) and on Debian's xz, which ships stripped.
#include <gtest/gtest.h>
#include <unistd.h>

#include <set>
#include <string>

#include <fmt/format.h>

#include "format/pprof.h"
#include "report/export.h"
#include "report/missing_symbols.h"
#include "report/report.h"
#include "report/symbolizer.h"

namespace profiling::report {
namespace {

const std::string kDir = REPORT_FIXTURE_DIR;

// A mapping of path's executable PT_LOAD segment as a PIE loaded at base
// maps it (page-aligned, as the kernel does).
format::Mapping text_mapping(Symbolizer& symbolizer, const std::string& path, uint64_t base, LoadSegment* text) {
  format::Mapping m;
  m.path = path;
  for (const LoadSegment& s : symbolizer.segments(m))
    if (s.executable) *text = s;
  const uint64_t page = 4096, skew = text->vaddr % page;
  m.start = base + text->vaddr - skew;
  m.file_offset = text->file_offset - skew;
  m.limit = base + text->vaddr + text->mem_size;
  m.build_id = read_build_id(path);
  return m;
}

format::Profile profile_of(const format::Mapping& mapping, std::vector<format::Sample> samples) {
  format::Profile p;
  p.period_ns = 1'000'000;
  p.mappings = {mapping};
  p.samples = std::move(samples);
  return p;
}

TEST(MissingSymbols, StrippedFunctionsAreRowsOfTheirOwnAndHinted) {
  const std::string stripped = kDir + "/report_fixture_pie_stripped", named = kDir + "/report_fixture_pie";
  Symbolizer symbolizer;
  LoadSegment text{};
  format::Mapping m = text_mapping(symbolizer, stripped, 0x555555554000, &text);
  ASSERT_TRUE(text.executable) << stripped;
  // The functions' link-time addresses, from the unstripped twin (same code).
  Symbolizer names;
  std::map<std::string, uint64_t> at;
  for (uint64_t a = text.vaddr; a < text.vaddr + text.mem_size; ++a) {
    format::Mapping twin = m;
    twin.path = named;
    twin.build_id.clear();
    const Symbol s = names.symbolize(&twin, m.start + (a - (text.vaddr - text.vaddr % 4096)));
    if (s.known && (s.function == "hot_inner" || s.function == "hot_outer")) at.try_emplace(s.function, s.function_address);
  }
  ASSERT_EQ(at.size(), 2u);
  const uint64_t bias = m.start - (text.vaddr - text.vaddr % 4096);
  // Three addresses in hot_inner, two in hot_outer.
  format::Profile profile = profile_of(m, {{bias + at["hot_inner"], 10},
                                           {bias + at["hot_inner"] + 1, 10},
                                           {bias + at["hot_inner"] + 4, 10},
                                           {bias + at["hot_outer"], 15},
                                           {bias + at["hot_outer"] + 2, 5}});
  SymbolizedProfile symbolized = symbolize_profile(profile, symbolizer, false, false);
  Report report = build_report(symbolized, {}, {});
  ASSERT_EQ(report.rows.size(), 2u);
  EXPECT_EQ(report.rows[0].function, fmt::format("report_fixture_pie_stripped+{:#x}", at["hot_inner"]));
  EXPECT_EQ(report.rows[0].samples, 30u);
  EXPECT_EQ(report.rows[1].function, fmt::format("report_fixture_pie_stripped+{:#x}", at["hot_outer"]));
  EXPECT_EQ(report.rows[1].samples, 20u);

  // The hint: the object, its build id, and what would name it.
  ASSERT_FALSE(m.build_id.empty());
  std::vector<std::string> hints = missing_symbol_hints(symbolized, [](const std::string&) { return std::string(); });
  ASSERT_EQ(hints.size(), 1u);
  EXPECT_EQ(hints[0], stripped + " (build id " + m.build_id +
                          "): 100% of its 50 samples have no function name; a debuginfod server (DEBUGINFOD_URLS) "
                          "would name them");
  hints = missing_symbol_hints(symbolized, [](const std::string&) { return std::string("fixture"); });
  ASSERT_EQ(hints.size(), 1u);
  EXPECT_NE(hints[0].find("the package fixture-dbgsym (Debian's debug archive) or a debuginfod server"),
            std::string::npos) << hints[0];
}

TEST(MissingSymbols, NoHintWhenMostSamplesAreNamed) {
  Symbolizer symbolizer;
  LoadSegment text{};
  format::Mapping m = text_mapping(symbolizer, kDir + "/report_fixture_pie", 0x555555554000, &text);
  std::vector<format::Sample> samples;
  for (uint64_t a = m.start + text.vaddr % 4096; a < m.limit; a += 8) samples.push_back({a, 1});
  const format::Profile profile = profile_of(m, samples);  // symbolized points into it
  SymbolizedProfile symbolized = symbolize_profile(profile, symbolizer, false, false);
  EXPECT_TRUE(missing_symbol_hints(symbolized, [](const std::string&) { return std::string(); }).empty());
}

// Debian's xz is stripped (its symbols are in xz-utils-dbgsym): samples
// spread over its code come out as a few rows, one per function, and the
// hint names the package dpkg says owns it.
TEST(MissingSymbols, DebianXz) {
  const std::string xz = "/usr/bin/xz";
  if (access(xz.c_str(), R_OK) != 0) GTEST_SKIP() << "no " << xz << " (xz-utils, scripts/install-deps.sh)";
  Symbolizer symbolizer;
  LoadSegment text{};
  format::Mapping m = text_mapping(symbolizer, xz, 0x555555554000, &text);
  ASSERT_TRUE(text.executable);
  std::vector<format::Sample> samples;
  const uint64_t first = m.start + text.vaddr % 4096;
  for (uint64_t a = first; a < m.limit; a += 7) samples.push_back({a, 1});
  const format::Profile profile = profile_of(m, samples);  // symbolized points into it
  SymbolizedProfile symbolized = symbolize_profile(profile, symbolizer, false, false);
  uint64_t unnamed = 0, named_by_address = 0;
  std::set<std::string> rows;
  for (const SymbolizedSample& s : symbolized.samples) {
    if (s.symbol.known) continue;
    unnamed += s.count;
    if (s.symbol.function.starts_with("xz+0x")) named_by_address += s.count, rows.insert(s.symbol.function);
  }
  // .dynsym names a few of xz's functions; most are unnamed, and .eh_frame
  // covers nearly all of its code (the PLT and padding aside).
  ASSERT_GT(unnamed * 2, symbolized.total);
  EXPECT_GT(named_by_address, unnamed * 9 / 10);
  EXPECT_GT(rows.size(), 20u);                  // split ...
  EXPECT_LT(rows.size() * 20, named_by_address);  // ... per function, not per address
  // The pprof file written of it names them so too (issue 35: go tool
  // pprof showed "[xz]" where profil report shows "xz+0x...").
  const format::Profile written = format::decode_pprof(export_pprof(profile, &symbolizer));
  size_t differ = 0;
  for (const SymbolizedSample& s : symbolized.samples) {
    const std::vector<format::Frame>* frames = written.frames_for(s.address);
    if (!frames || frames->empty() || frames->back().function != s.symbol.function) ++differ;
  }
  EXPECT_EQ(differ, 0u);
  if (access("/usr/bin/dpkg", X_OK) != 0) GTEST_SKIP() << "no dpkg";
  EXPECT_EQ(debian_package_of(xz), "xz-utils");
  const std::vector<std::string> hints = missing_symbol_hints(symbolized);
  ASSERT_EQ(hints.size(), 1u);
  EXPECT_TRUE(hints[0].starts_with(xz + " (build id " + m.build_id + "): ")) << hints[0];
  EXPECT_NE(hints[0].find("xz-utils-dbgsym"), std::string::npos) << hints[0];
}

}  // namespace
}  // namespace profiling::report
