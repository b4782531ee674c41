#include "top_view.h"

#include <gtest/gtest.h>

namespace profiling::cli {
namespace {

TopRow row(const std::string& function, int pid, int tid, TopCounts last, TopCounts all) {
  TopRow r;
  r.function = function;
  r.object = "prog";
  r.pid = pid;
  r.tid = tid;
  r.process = pid == 10 ? "server" : "client";
  r.thread = "t" + std::to_string(tid);
  r.last = last;
  r.all = all;
  return r;
}

// hot leads the last window by self, main by total, old since the start.
TopSnapshot snapshot() {
  TopSnapshot s;
  s.rows = {row("main", 10, 10, {0, 100}, {0, 400}), row("hot", 10, 10, {60, 60}, {100, 100}),
            row("warm", 10, 11, {40, 40}, {60, 60}), row("old", 10, 10, {0, 0}, {240, 240}),
            row("warm", 10, 12, {0, 0}, {0, 0}), row("other", 20, 20, {50, 50}, {50, 50})};
  s.process_samples = {{10, {100, 400}}, {20, {50, 50}}};
  s.process_names = {{10, "server"}, {20, "client"}};
  return s;
}

std::vector<std::string> functions(const std::vector<TopRow>& rows) {
  std::vector<std::string> out;
  for (const TopRow& r : rows) out.push_back(r.function + "/" + std::to_string(r.pid));
  return out;
}

TEST(TopView, KeysSortSwitchFreezeMergeAskAndQuit) {
  TopViewState s;
  EXPECT_EQ(apply_key(&s, 's'), TopKey::changed);
  EXPECT_EQ(s.window, TopWindow::since_start);
  EXPECT_EQ(apply_key(&s, 't'), TopKey::changed);
  EXPECT_EQ(s.measure, TopMeasure::total);
  EXPECT_EQ(apply_key(&s, 'f'), TopKey::changed);
  EXPECT_TRUE(s.frozen);
  EXPECT_EQ(apply_key(&s, 'm'), TopKey::changed);
  EXPECT_TRUE(s.threads_merged);
  EXPECT_EQ(apply_key(&s, 'p'), TopKey::ask_process);
  EXPECT_EQ(apply_key(&s, 'x'), TopKey::ignored);
  EXPECT_EQ(apply_key(&s, 'q'), TopKey::quit);
  EXPECT_EQ(apply_key(&s, 3), TopKey::quit);
  EXPECT_EQ(apply_key(&s, 's'), TopKey::changed);
  EXPECT_EQ(s.window, TopWindow::last);
}

TEST(TopView, RowsAreSortedByTheWindowAndMeasureAsked) {
  TopViewState s;
  EXPECT_EQ(functions(shown_rows(snapshot(), s)),
            (std::vector<std::string>{"hot/10", "other/20", "warm/10", "old/10", "main/10", "warm/10"}));
  s.measure = TopMeasure::total;
  EXPECT_EQ(functions(shown_rows(snapshot(), s))[0], "main/10");
  s.window = TopWindow::since_start;
  s.measure = TopMeasure::self;
  EXPECT_EQ(functions(shown_rows(snapshot(), s))[0], "old/10");
}

TEST(TopView, AProcessIsAskedForByPidOrPartOfItsName) {
  TopViewState s;
  s.process = "20";
  EXPECT_EQ(functions(shown_rows(snapshot(), s)), (std::vector<std::string>{"other/20"}));
  s.process = "serv";
  EXPECT_EQ(shown_rows(snapshot(), s).size(), 5u);
  s.process = "2";  // a pid is whole
  EXPECT_TRUE(shown_rows(snapshot(), s).empty());
  EXPECT_TRUE(process_matches("", 1, "x"));
  EXPECT_FALSE(process_matches("10", 100, "x"));
}

TEST(TopView, MergedThreadsSumAFunctionsRowsAndSayHowMany) {
  TopViewState s;
  s.threads_merged = true;
  const std::vector<TopRow> rows = shown_rows(snapshot(), s);
  ASSERT_EQ(rows.size(), 5u);
  const auto warm = std::find_if(rows.begin(), rows.end(), [](const TopRow& r) { return r.function == "warm"; });
  EXPECT_EQ(warm->thread, "2 threads");
  EXPECT_EQ(warm->tid, 0);
  EXPECT_EQ(warm->all, (TopCounts{60, 60}));
  const auto hot = std::find_if(rows.begin(), rows.end(), [](const TopRow& r) { return r.function == "hot"; });
  EXPECT_EQ(hot->thread, "t10");  // one thread: its name
}

TEST(TopView, TheScreenIsTitleHeadsRowsAndTheStatusLineLast) {
  TopViewState s;
  TopHeader h{.target = "server (pid 10)", .hz = 500, .samples = 12345, .lost = 7, .ended = ""};
  std::vector<std::string> lines = render_top(snapshot(), s, h, 150, 12);
  ASSERT_EQ(lines.size(), 12u);
  for (const std::string& line : lines) EXPECT_LE(line.size(), 150u);
  EXPECT_NE(lines[0].find("server (pid 10)"), std::string::npos);
  EXPECT_NE(lines[0].find("sorted by self, last 1 s"), std::string::npos);
  EXPECT_NE(lines[1].find("150 in the last window, 450 since the start"), std::string::npos);
  // hot: 60 of the window's 150 periods, self and total; 100 of 450 since.
  EXPECT_EQ(lines[3].rfind("  40.0   40.0    22.2   22.2  hot (prog)", 0), 0u) << lines[3];
  EXPECT_NE(lines[3].find("server"), std::string::npos);
  EXPECT_EQ(lines[11].rfind("sampled 12345  lost 7", 0), 0u) << lines[11];
  s.frozen = true;
  s.process = "client";
  lines = render_top(snapshot(), s, h, 40, 6);
  ASSERT_EQ(lines.size(), 6u);
  for (const std::string& line : lines) EXPECT_LE(line.size(), 40u);
  EXPECT_EQ(lines[0], "profil top [FROZEN]  server (pid 10)  50");
  lines = render_top(snapshot(), s, h, 100, 6);
  EXPECT_NE(lines[0].find("[FROZEN]"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("50 in the last window, 50 since"), std::string::npos) << lines[1];
  EXPECT_EQ(lines[3].rfind(" 100.0  100.0   100.0  100.0  other", 0), 0u) << lines[3];
}

}  // namespace
}  // namespace profiling::cli
