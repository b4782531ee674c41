// The symbolizer on real objects at their real runtime addresses: each
// fixture program prints where its functions are and its /proc/self/maps,
// and the test symbolizes those addresses as a profile would record them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "format/profile.h"
#include "report/report.h"
#include "report/symbolizer.h"

namespace profiling::report {
namespace {

const std::string kDir = REPORT_FIXTURE_DIR;

struct FixtureRun {
  std::map<std::string, uint64_t> functions;  // name -> runtime address
  format::Profile profile;                    // executable mappings, no samples
};

std::string run(const std::string& command) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return out;
  char buffer[4096];
  size_t got;
  while ((got = fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, got);
  pclose(pipe);
  return out;
}

// "map 5555-5556 r-xp 00001000 08:01 1234 /path" lines -> executable mappings.
FixtureRun run_fixture(const std::string& program) {
  FixtureRun result;
  std::istringstream lines(run(kDir + "/" + program + " addresses"));
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("sym ", 0) == 0) {
      size_t space = line.rfind(' ');
      result.functions[line.substr(4, space - 4)] = std::stoull(line.substr(space + 1), nullptr, 16);
    } else if (line.rfind("map ", 0) == 0) {
      std::istringstream fields(line.substr(4));
      std::string range, perms, offset, device, inode, path;
      fields >> range >> perms >> offset >> device >> inode;
      std::getline(fields >> std::ws, path);
      if (perms.size() < 3 || perms[2] != 'x') continue;
      format::Mapping m;
      m.start = std::stoull(range.substr(0, range.find('-')), nullptr, 16);
      m.limit = std::stoull(range.substr(range.find('-') + 1), nullptr, 16);
      m.file_offset = std::stoull(offset, nullptr, 16);
      m.path = path.empty() ? "[anon]" : path;
      result.profile.mappings.push_back(m);
    }
  }
  return result;
}

Symbol symbolize(Symbolizer& symbolizer, const format::Profile& profile, uint64_t address) {
  return symbolizer.symbolize(profile.mapping_for(address), address);
}

// A non-PIE's pointer to a library function is the canonical PLT entry in
// the executable (System V x86-64 ABI), so the library is checked only for
// position-independent programs.
void expect_own_functions(const std::string& program, bool check_library = true) {
  FixtureRun fixture = run_fixture(program);
  ASSERT_EQ(fixture.functions.size(), 7u) << "fixture " << program << " did not run";
  Symbolizer symbolizer;
  for (std::string name : {"hot_inner", "hot_outer", "local_helper", "main", "fixture_library_work"}) {
    if (name == "fixture_library_work" && !check_library) continue;
    uint64_t address = fixture.functions.at(name);
    // An address inside the function, not only its first byte.
    Symbol symbol = symbolize(symbolizer, fixture.profile, address + 2);
    EXPECT_TRUE(symbol.known) << name;
    EXPECT_EQ(symbol.function, name);
    EXPECT_EQ(symbol.file_address - symbol.function_address, 2u) << name;
  }
  EXPECT_EQ(object_basename(symbolize(symbolizer, fixture.profile, fixture.functions.at("main")).object), program);
  if (check_library) {
    EXPECT_EQ(object_basename(symbolize(symbolizer, fixture.profile, fixture.functions.at("fixture_library_work")).object),
              "libreport_fixture.so");
  }
  // Each object was read once, however many lookups.
  size_t loaded = symbolizer.objects_loaded();
  for (int i = 0; i < 100; ++i) symbolize(symbolizer, fixture.profile, fixture.functions.at("hot_inner") + i % 8);
  EXPECT_EQ(symbolizer.objects_loaded(), loaded);
  EXPECT_TRUE(symbolizer.take_warnings().empty());
}

TEST(Symbolizer, PositionIndependentExecutableAndSharedLibrary) { expect_own_functions("report_fixture_pie"); }

TEST(Symbolizer, FixedAddressExecutable) {
  FixtureRun fixture = run_fixture("report_fixture_nopie");
  ASSERT_FALSE(fixture.functions.empty());
  // A non-PIE is linked at 0x400000: its runtime address is its file address.
  EXPECT_LT(fixture.functions.at("main"), 0x1000000u);
  expect_own_functions("report_fixture_nopie", false);
}

TEST(Symbolizer, StrippedWithDebugLinkFindsTheSeparateDebugFile) {
  expect_own_functions("report_fixture_pie_linked");
  FixtureRun fixture = run_fixture("report_fixture_pie_linked");
  Symbolizer symbolizer;
  uint64_t address = fixture.functions.at("hot_inner");
  const format::Mapping* mapping = fixture.profile.mapping_for(address);
  Symbol symbol = symbolizer.symbolize(mapping, address);
  SourceLine line = symbolizer.source_line(mapping, symbol);
  EXPECT_EQ(object_basename(line.file), "prog.c");
  EXPECT_GT(line.line, 0);
}

// A debug tree laid out as Debian's -dbgsym packages install it, holding
// the debug file of report_fixture_pie_stripped (its build id in *id):
// <root>/.build-id/xx/yyyy.debug (gdb manual, "Separate Debug Files"). The
// root, "" when it could not be made.
std::string stripped_fixture_debug_tree(std::string* id) {
  *id = read_build_id(kDir + "/report_fixture_pie_stripped");
  char pattern[] = "/tmp/profil-debug-XXXXXX";
  if (id->size() != 40 || mkdtemp(pattern) == nullptr) return {};
  const std::string root = pattern;
  const std::string dir = root + "/.build-id/" + id->substr(0, 2);
  const std::string copy = "mkdir -p " + dir + " && cp " + kDir + "/report_fixture_pie_linked.debug " + dir + "/" +
                           id->substr(2) + ".debug";
  return std::system(copy.c_str()) == 0 ? root : std::string();
}

TEST(Symbolizer, StrippedFindsItsDebugFileByBuildId) {
  std::string id;
  const std::string root = stripped_fixture_debug_tree(&id);
  ASSERT_FALSE(root.empty());
  FixtureRun fixture = run_fixture("report_fixture_pie_stripped");
  Symbolizer with_debug(root), without_debug("/nonexistent");
  uint64_t address = fixture.functions.at("hot_outer") + 3;
  const format::Mapping* mapping = fixture.profile.mapping_for(address);
  Symbol symbol = with_debug.symbolize(mapping, address);
  EXPECT_EQ(symbol.function, "hot_outer");
  EXPECT_EQ(object_basename(with_debug.source_line(mapping, symbol).file), "prog.c");
  EXPECT_FALSE(without_debug.symbolize(mapping, address).known);
  std::system(("rm -rf " + root).c_str());
}

// Nothing names its functions: each is "object+0x<its first link-time
// address>", as .eh_frame delimits it (unnamed_code.h).
TEST(Symbolizer, FullyStrippedNamesAddressesByTheFunctionTheyAreIn) {
  FixtureRun fixture = run_fixture("report_fixture_pie_stripped");
  ASSERT_FALSE(fixture.functions.empty());
  Symbolizer symbolizer;
  const uint64_t inner = fixture.functions.at("hot_inner");
  uint64_t link_time = 0;
  ASSERT_TRUE(symbolizer.file_address(*fixture.profile.mapping_for(inner), inner, &link_time));
  const std::string name = "report_fixture_pie_stripped+0x" + fmt::format("{:x}", link_time);
  Symbol symbol = symbolize(symbolizer, fixture.profile, inner);
  EXPECT_FALSE(symbol.known);
  EXPECT_EQ(symbol.function, name);
  EXPECT_EQ(symbolize(symbolizer, fixture.profile, inner + 3).function, name);
  EXPECT_NE(symbolize(symbolizer, fixture.profile, fixture.functions.at("hot_outer")).function, name);
  EXPECT_EQ(object_basename(symbol.object), "report_fixture_pie_stripped");
  // The library keeps its symbols.
  EXPECT_EQ(symbolize(symbolizer, fixture.profile, fixture.functions.at("fixture_library_work")).function,
            "fixture_library_work");
}

TEST(Symbolizer, ZeroSizeSymbolsExtendToTheNextSymbol) {
  FixtureRun fixture = run_fixture("report_fixture_pie");
  Symbolizer symbolizer;
  uint64_t first = fixture.functions.at("zero_size_first"), second = fixture.functions.at("zero_size_second");
  ASSERT_EQ(second - first, 8u);  // seven nops and a ret
  EXPECT_EQ(symbolize(symbolizer, fixture.profile, first + 7).function, "zero_size_first");
  EXPECT_EQ(symbolize(symbolizer, fixture.profile, second).function, "zero_size_second");
}

TEST(Symbolizer, DemanglesCxxNames) {
  FixtureRun fixture = run_fixture("report_fixture_cxx");
  ASSERT_EQ(fixture.functions.size(), 2u);
  Symbolizer symbolizer;
  for (const auto& [name, address] : fixture.functions)
    EXPECT_EQ(symbolize(symbolizer, fixture.profile, address + 1).function, name);
}

TEST(Symbolizer, SourceLinesFromDwarf) {
  FixtureRun fixture = run_fixture("report_fixture_pie");
  Symbolizer symbolizer;
  uint64_t address = fixture.functions.at("hot_outer");
  const format::Mapping* mapping = fixture.profile.mapping_for(address);
  SourceLine line = symbolizer.source_line(mapping, symbolizer.symbolize(mapping, address));
  EXPECT_EQ(object_basename(line.file), "prog.c");
  // hot_outer's definition line in prog.c.
  EXPECT_EQ(line.line, 36);
}

// The source line of the first line of `source` holding `marker`.
int line_of(const std::string& source, const std::string& marker) {
  std::istringstream lines(run("cat '" + source + "'"));
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number)
    if (line.find(marker) != std::string::npos) return number;
  return 0;
}
TEST(Symbolizer, MiniDebugInfoNamesAStrippedProgram) {
  // Made by the gdb manual's recipe ("MiniDebugInfo", report_fixtures/
  // minidebuginfo.sh): no .symtab, its function symbols xz-compressed in
  // .gnu_debugdata.
  const std::string sections = run("readelf -SW " + kDir + "/report_fixture_pie_mini");
  ASSERT_NE(sections.find(".gnu_debugdata"), std::string::npos) << sections;
  ASSERT_EQ(sections.find(".symtab"), std::string::npos) << sections;
  expect_own_functions("report_fixture_pie_mini");
}

TEST(Symbolizer, AGoneProgramIsNamedByTheDebugFileItsBuildIdNames) {
  // The profile recorded the program's build id; the program is gone but
  // the debug tree has its debug file (program headers and symbols kept).
  std::string id;
  const std::string root = stripped_fixture_debug_tree(&id);
  ASSERT_FALSE(root.empty());
  FixtureRun fixture = run_fixture("report_fixture_pie_stripped");
  uint64_t address = fixture.functions.at("hot_outer") + 3;
  format::Mapping gone = *fixture.profile.mapping_for(address);
  gone.path = root + "/gone/report_fixture_pie_stripped";
  gone.build_id = id;
  Symbolizer symbolizer(root);
  Symbol symbol = symbolizer.symbolize(&gone, address);
  EXPECT_EQ(symbol.function, "hot_outer");
  EXPECT_EQ(symbol.file_address - symbol.function_address, 3u);
  EXPECT_EQ(object_basename(symbolizer.source_line(&gone, symbol).file), "prog.c");
  EXPECT_TRUE(symbolizer.take_warnings().empty());
  // Without the build id nothing names it, and the warning says why.
  gone.build_id.clear();
  EXPECT_FALSE(symbolizer.symbolize(&gone, address).known);
  EXPECT_EQ(symbolizer.take_warnings().size(), 1u);
  std::system(("rm -rf " + root).c_str());
}


// Inlined functions (DWARF inlined-subroutine scopes) are frames of their
// own, innermost first, each caller at the line it inlined the next one;
// the outermost is the function the symbol table names.
// Calls visit(frames) with the frames of every address of a fixture's
// function, as the symbolizer gives them.
template <typename Visit>
void for_each_address_of(const std::string& program, const std::string& function, Symbolizer& symbolizer,
                         Visit&& visit) {
  FixtureRun fixture = run_fixture(program);
  const uint64_t start = fixture.functions.at(function);
  const format::Mapping* mapping = fixture.profile.mapping_for(start);
  ASSERT_NE(mapping, nullptr);
  const Symbol first = symbolizer.symbolize(mapping, start);
  ASSERT_TRUE(first.known);
  for (uint64_t address = start; address < start + first.function_size; ++address) {
    const std::vector<format::Frame> frames = symbolizer.frames(mapping, symbolizer.symbolize(mapping, address));
    ASSERT_FALSE(frames.empty());
    visit(frames);
  }
}

TEST(Symbolizer, InlinedFunctionsAreFramesInnermostFirst) {
  Symbolizer symbolizer;
  const std::string source = std::string(REPORT_FIXTURE_SRC) + "/inline.c";
  const int square_body = line_of(source, "SQUARE_BODY"), middle_calls = line_of(source, "MIDDLE_CALLS_SQUARE");
  const int outer_calls = line_of(source, "OUTER_CALLS_MIDDLE");
  size_t depths[4] = {};
  bool found_square = false;
  for_each_address_of("report_fixture_inline", "outer", symbolizer, [&](const std::vector<format::Frame>& frames) {
    ++depths[std::min<size_t>(frames.size(), 3)];
    EXPECT_EQ(frames.back().function, "outer");  // as the flat views name it
    if (frames.size() == 3 && frames[0].function == "square" && frames[0].line == square_body) {
      found_square = true;
      EXPECT_EQ(frames[1].function, "middle");
      EXPECT_EQ(frames[1].line, middle_calls);
      EXPECT_EQ(object_basename(frames[1].file), "inline.c");
      EXPECT_EQ(frames[2].line, outer_calls);
    }
  });
  EXPECT_TRUE(found_square) << "no address of outer has square inlined through middle at line " << square_body
                            << " (depths 1: " << depths[1] << ", 2: " << depths[2] << ", 3: " << depths[3] << ")";
  // An address no symbol table names has no frames.
  EXPECT_TRUE(symbolizer.frames(nullptr, symbolizer.symbolize(nullptr, 0x10)).empty());
}

// The same in C++ namespaces, as GCC lays them out (the function at the
// unit's top level) and as clang does (inside the namespace's DIE, found
// when the top level has none at the address).
void expect_square_inlined_in_work(const std::string& program) {
  Symbolizer symbolizer;
  const int square_body = line_of(std::string(REPORT_FIXTURE_SRC) + "/inline_ns.cc", "NS_SQUARE_BODY");
  size_t inlined = 0;
  for_each_address_of(program, "work", symbolizer, [&](const std::vector<format::Frame>& frames) {
    EXPECT_EQ(frames.back().function, "fixture::inner::work(unsigned long)");
    if (frames.size() == 2 && frames[0].function == "fixture::inner::square(unsigned long)" &&
        frames[0].line == square_body)
      ++inlined;
  });
  EXPECT_GT(inlined, 0u) << program << ": no address of work has square inlined at line " << square_body;
}

TEST(Symbolizer, InlinedFunctionsInNamespacesAsGccPutsThem) {
  expect_square_inlined_in_work("report_fixture_inline_ns");
}

TEST(Symbolizer, InlinedFunctionsInNamespacesAsClangPutsThem) {
  if (!REPORT_FIXTURE_CLANG) GTEST_SKIP() << "no clang++ at configure time (scripts/install-deps.sh installs it)";
  expect_square_inlined_in_work("report_fixture_inline_ns_clang");
}

TEST(Symbolizer, BuildIdMismatchWarnsOnceAndGroupsAsUnknown) {
  FixtureRun fixture = run_fixture("report_fixture_pie");
  std::string real_id = read_build_id(kDir + "/report_fixture_pie");
  ASSERT_EQ(real_id.size(), 40u);  // GNU ld's default sha1 build id
  for (format::Mapping& m : fixture.profile.mappings) {
    if (object_basename(m.path) == "report_fixture_pie") m.build_id = "00112233";
    if (object_basename(m.path) == "libreport_fixture.so") m.build_id = read_build_id(m.path);
  }
  Symbolizer symbolizer;
  Symbol a = symbolize(symbolizer, fixture.profile, fixture.functions.at("hot_inner"));
  Symbol b = symbolize(symbolizer, fixture.profile, fixture.functions.at("main"));
  EXPECT_FALSE(a.known);
  EXPECT_FALSE(b.known);
  EXPECT_EQ(object_basename(a.object), "report_fixture_pie");
  // The library's build id matches: it symbolizes.
  EXPECT_TRUE(symbolize(symbolizer, fixture.profile, fixture.functions.at("fixture_library_work")).known);
  std::vector<std::string> warnings = symbolizer.take_warnings();
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("build id"), std::string::npos);
}

TEST(Symbolizer, MissingFilesAndPseudoMappingsAreUnknownInTheirObject) {
  format::Profile profile;
  profile.mappings.push_back({0x1000, 0x2000, 0, "/nonexistent/libgone.so", ""});
  profile.mappings.push_back({0x7000, 0x8000, 0, "[vdso]", ""});
  Symbolizer symbolizer;
  Symbol gone = symbolize(symbolizer, profile, 0x1234);
  Symbol vdso = symbolize(symbolizer, profile, 0x7010);
  Symbol nowhere = symbolize(symbolizer, profile, 0x9999);
  EXPECT_EQ(gone.function, kUnknownFunction);
  EXPECT_EQ(gone.object, "/nonexistent/libgone.so");
  EXPECT_EQ(vdso.object, "[vdso]");
  EXPECT_EQ(nowhere.object, kUnknownFunction);
  symbolize(symbolizer, profile, 0x1235);
  std::vector<std::string> warnings = symbolizer.take_warnings();
  ASSERT_EQ(warnings.size(), 1u);  // the missing file, once; the vDSO is not a problem
  EXPECT_NE(warnings[0].find("libgone.so"), std::string::npos);
}

// Names a profile file carried (format::Profile::frames), deliberately unlike
// the real ones so that which source named an address shows.
std::vector<format::Frame> carried_name(const std::string& name) {
  return {{"inlined_" + name, "", "inline.h", 3}, {"file_" + name, "_Z5file_v", "file.c", 9}};
}

TEST(Symbolizer, ProfileNamesAreUsedOnlyWhenTheObjectCannotName) {
  FixtureRun fixture = run_fixture("report_fixture_pie");
  uint64_t inner = fixture.functions.at("hot_inner");
  const format::Mapping* mapping = fixture.profile.mapping_for(inner);
  ASSERT_NE(mapping, nullptr);
  std::vector<format::Frame> carried = carried_name("inner");
  Symbolizer symbolizer;
  // The object is here and its build id matches: its symbol table wins.
  Symbol present = symbolizer.symbolize(mapping, inner, &carried);
  EXPECT_TRUE(present.known);
  EXPECT_FALSE(present.from_profile);
  EXPECT_EQ(present.function, "hot_inner");
  EXPECT_EQ(object_basename(symbolizer.source_line(mapping, present).file), "prog.c");
  EXPECT_TRUE(symbolizer.take_warnings().empty());

  // Gone (the profile moved to another machine): the outermost carried
  // frame's function, the innermost's line, in the same object.
  format::Mapping gone = *mapping;
  gone.path = "/nonexistent/report_fixture_pie";
  Symbol named = symbolizer.symbolize(&gone, inner, &carried);
  EXPECT_FALSE(named.known);
  EXPECT_TRUE(named.from_profile);
  EXPECT_EQ(named.function, "file_inner");
  EXPECT_EQ(named.object, gone.path);
  SourceLine line = symbolizer.source_line(&gone, named);
  EXPECT_EQ(line.file, "inline.h");
  EXPECT_EQ(line.line, 3);
  std::vector<std::string> warnings = symbolizer.take_warnings();
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("/nonexistent/report_fixture_pie: "), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("names come from the profile file"), std::string::npos) << warnings[0];

  // Rebuilt since (another build id): the file's names, not the new build's.
  format::Mapping rebuilt = *mapping;
  rebuilt.build_id = "00112233";
  Symbol renamed = symbolizer.symbolize(&rebuilt, inner, &carried);
  EXPECT_TRUE(renamed.from_profile);
  EXPECT_EQ(renamed.function, "file_inner");
  warnings = symbolizer.take_warnings();
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("build id"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("names come from the profile file"), std::string::npos) << warnings[0];

  // Without names in the file, the samples stay [unknown] and say so.
  format::Mapping bare = gone;
  bare.path = "/nonexistent/other";
  EXPECT_EQ(symbolizer.symbolize(&bare, inner, nullptr).function, kUnknownFunction);
  warnings = symbolizer.take_warnings();
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("shown as [unknown]"), std::string::npos) << warnings[0];
}

TEST(Report, ProfileNamesGroupLikeSymbolTableNames) {
  FixtureRun fixture = run_fixture("report_fixture_pie");
  format::Profile& profile = fixture.profile;
  profile.period_ns = 1'000'000;
  uint64_t inner = fixture.functions.at("hot_inner"), outer = fixture.functions.at("hot_outer");
  for (format::Mapping& m : profile.mappings)
    if (object_basename(m.path) == "report_fixture_pie") m.path = "/nonexistent/report_fixture_pie";
  profile.samples = {{inner, 30}, {inner + 4, 10}, {outer, 20}};
  profile.frames[inner] = carried_name("inner");
  profile.frames[inner + 4] = carried_name("inner");
  profile.frames[outer] = {{"", "_Z9hot_outerv", "", 0}};  // a mangled name only: shown demangled
  Symbolizer symbolizer;
  SymbolizedProfile symbolized = symbolize_profile(profile, symbolizer, true);
  Report report = build_report(symbolized, {}, {});
  ASSERT_EQ(report.rows.size(), 2u);
  EXPECT_EQ(report.rows[0].function, "file_inner");
  EXPECT_EQ(report.rows[0].samples, 40u);
  EXPECT_EQ(report.rows[0].object, "report_fixture_pie");
  EXPECT_EQ(report.rows[1].function, "hot_outer()");
  ReportOptions by_line;
  by_line.view = View::line;
  Report lines = build_report(symbolized, by_line, {});
  ASSERT_EQ(lines.rows.size(), 2u);
  EXPECT_EQ(lines.rows[0].file, "inline.h");
  EXPECT_EQ(lines.rows[0].line, 3);
}

TEST(Report, UnnamedAddressesAreGroupedPerFunctionNeverDropped) {
  FixtureRun fixture = run_fixture("report_fixture_pie_stripped");
  format::Profile& profile = fixture.profile;
  profile.period_ns = 1'000'000;
  uint64_t inner = fixture.functions.at("hot_inner"), outer = fixture.functions.at("hot_outer");
  uint64_t library = fixture.functions.at("fixture_library_work");
  profile.samples = {{inner, 30}, {outer, 20}, {library, 10}, {0x10, 5}};
  Symbolizer symbolizer;
  SymbolizedProfile symbolized = symbolize_profile(profile, symbolizer, false);
  Report report = build_report(symbolized, {}, {});
  ASSERT_EQ(report.rows.size(), 4u);
  EXPECT_TRUE(report.rows[0].function.starts_with("report_fixture_pie_stripped+0x")) << report.rows[0].function;
  EXPECT_EQ(report.rows[0].object, "report_fixture_pie_stripped");
  EXPECT_EQ(report.rows[0].samples, 30u);
  EXPECT_TRUE(report.rows[1].function.starts_with("report_fixture_pie_stripped+0x")) << report.rows[1].function;
  EXPECT_EQ(report.rows[1].samples, 20u);
  EXPECT_EQ(report.rows[2].function, "fixture_library_work");
  EXPECT_EQ(report.rows[3].function, "[unknown]");  // in no mapping
  EXPECT_EQ(report.rows[3].object, "[unknown]");
  EXPECT_EQ(report.summary.samples, 65u);
  EXPECT_NEAR(report.rows[0].percent, 100.0 * 30 / 65, 1e-9);
}

}  // namespace
}  // namespace profiling::report
