// The HTML report opened in a real browser: headless Chromium loads the
// page (from a file, no network), runs its script and dumps the DOM, in
// which the summary, the sortable table and the charts must be.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

namespace {

namespace fs = std::filesystem;

std::string capture(const std::string& command, int* status) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return out;
  char buffer[8192];
  size_t got;
  while ((got = fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, got);
  *status = pclose(pipe);
  return out;
}

std::string find_chromium() {
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
    int status = 0;
    std::string path = capture(std::string("command -v ") + name + " 2>/dev/null", &status);
    while (!path.empty() && (path.back() == '\n' || path.back() == ' ')) path.pop_back();
    if (status == 0 && !path.empty()) return path;
  }
  return {};
}

size_t count(const std::string& text, const std::regex& pattern) {
  return static_cast<size_t>(std::distance(std::sregex_iterator(text.begin(), text.end(), pattern), std::sregex_iterator()));
}

class HtmlReport : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* build = std::getenv("PROFIL_BUILD_DIR");
    ASSERT_NE(build, nullptr);
    build_ = build;
    char pattern[] = "/tmp/profil-html-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ignored;
    if (!dir_.empty()) fs::remove_all(dir_, ignored);
  }
  // Writes the fixture's exact profile and its HTML report; returns the page.
  std::string make_report() {
    std::string profile = dir_ + "/app.profraw", html = dir_ + "/report.html";
    std::string fixture = build_ + "/tests/report_fixtures/report_fixture_pie";
    int status = 0;
    capture(build_ + "/bin/report_make_profile " + profile + " " + fixture +
                " hot_inner=600 hot_inner+8=100 hot_outer=300 local_helper=50 main=30 fixture_library_work=15"
                " zero_size_first+3=5 @nowhere=4",
            &status);
    EXPECT_EQ(status, 0);
    capture(build_ + "/bin/profil report --format html -o " + html + " " + profile, &status);
    EXPECT_EQ(status, 0);
    std::ifstream in(html);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  std::string build_, dir_;
};

TEST_F(HtmlReport, IsSelfContained) {
  std::string page = make_report();
  ASSERT_FALSE(page.empty());
  // Nothing is fetched: no external scripts, styles, images or fonts.
  EXPECT_EQ(page.find("<script src"), std::string::npos);
  EXPECT_EQ(page.find("<link"), std::string::npos);
  EXPECT_EQ(page.find("@import"), std::string::npos);
  EXPECT_FALSE(std::regex_search(page, std::regex(R"((src|href)\s*=\s*["']?(https?:)?//)")));
}

TEST_F(HtmlReport, ChromiumRendersTheTableAndTheCharts) {
  std::string chromium = find_chromium();
  if (chromium.empty()) GTEST_SKIP() << "chromium is not installed (scripts/install-deps.sh installs it)";
  std::string page = make_report();
  ASSERT_FALSE(page.empty());
  std::string profile_dir = dir_ + "/chromium-profile";
  int status = 0;
  std::string dom = capture("timeout 50 " + chromium +
                                " --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking"
                                " --disable-component-update --disable-sync --user-data-dir=" + profile_dir +
                                " --dump-dom file://" + dir_ + "/report.html 2>/dev/null",
                            &status);
  ASSERT_EQ(status, 0) << "chromium failed";
  // The summary says how many samples, at what rate, over how much CPU time.
  EXPECT_NE(dom.find("id=\"summary\""), std::string::npos);
  EXPECT_NE(dom.find("<b>1104</b> samples at <b>1000 Hz</b>"), std::string::npos);
  EXPECT_NE(dom.find("<b>1.104 s</b> of CPU time"), std::string::npos);
  // The table is there and the page's script ran on it (made it sortable).
  std::smatch table;
  ASSERT_TRUE(std::regex_search(dom, table, std::regex(R"(<table[^>]*id="profile-table"[^>]*>([\s\S]*?)</table>)")));
  EXPECT_NE(table[0].str().find("data-sortable=\"ready\""), std::string::npos);
  EXPECT_EQ(count(table[1].str(), std::regex("<tr>")), 1u + 7u);  // header and seven rows
  EXPECT_NE(table[1].str().find("hot_inner"), std::string::npos);
  // Bar chart: one bar per row, each with its interval whisker.
  std::smatch bars;
  ASSERT_TRUE(std::regex_search(dom, bars, std::regex(R"(<svg[^>]*id="chart-hottest"[\s\S]*?</svg>)")));
  EXPECT_EQ(count(bars[0].str(), std::regex(R"(<rect class="bar")")), 7u);
  EXPECT_EQ(count(bars[0].str(), std::regex(R"(<line class="whisker")")), 7u);
  // Address-space charts for the program and the library.
  std::smatch space;
  ASSERT_TRUE(std::regex_search(dom, space, std::regex(R"(<div id="chart-address-space">[\s\S]*?</div>)")));
  EXPECT_EQ(count(space[0].str(), std::regex("<svg")), 2u);
  EXPECT_GE(count(space[0].str(), std::regex(R"(<rect class="col")")), 4u);
  // Source lines of the hottest function with their counts.
  std::smatch source;
  ASSERT_TRUE(std::regex_search(dom, source, std::regex(R"(<div id="source-lines">[\s\S]*</div>)")));
  EXPECT_NE(source[0].str().find("hot_inner"), std::string::npos);
  EXPECT_TRUE(std::regex_search(source[0].str(), std::regex(R"(prog\.c:31</td><td class="num">600</td>)")));
}

}  // namespace
