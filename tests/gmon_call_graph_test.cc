// gprof's call graph of a program never built with -pg: `profil run --gmon`
// and `profil report --format gmon` write arcs from the sampled stacks
// (report::gmon_arcs_from_stacks), and binutils gprof -q reads them.
//
// The program (gmon_progs/call_split.c) calls work() equally often from
// light() (1,000 steps) and heavy() (9,000 steps). The truth: 10 % of
// work's time is light's. The arcs from samples must give light a share of
// work's `called` column within the binomial noise of that; gcc -pg's
// arcs count calls, so gprof splits work's time 50/50 (the second test
// shows it with the same program built with -pg and glibc's gmon).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "run_support.h"

namespace {

using namespace profil_test;

constexpr double kLightShare = 1000.0 / (1000.0 + 9000.0);
constexpr const char* kRounds = "50000";  // ~0.6 s of CPU

// One caller line of a gprof -q entry: "self children called/total name [i]".
struct Parent {
  double self = 0, children = 0;
  uint64_t called = 0, total = 0;
};

// The callers gprof lists above `function`'s primary line, by name.
std::map<std::string, Parent> parents_of(const std::string& call_graph, const std::string& function) {
  std::map<std::string, Parent> parents, block;
  const std::regex parent_line(R"(^\s+([0-9.]+)\s+([0-9.]+)\s+([0-9]+)/([0-9]+)\s+(\S+) \[[0-9]+\]$)");
  const std::regex primary(R"(^\[[0-9]+\]\s+[0-9.]+\s+[0-9.]+\s+[0-9.]+\s+[0-9+]*\s*(\S+) \[[0-9]+\]$)");
  std::istringstream in(call_graph);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (line.rfind("-----", 0) == 0) {
      block.clear();
    } else if (std::regex_match(line, m, primary)) {
      if (m[1] == function) return block;
      block.clear();  // the callees of another function follow
    } else if (std::regex_match(line, m, parent_line)) {
      block[m[5]] = {std::stod(m[1]), std::stod(m[2]), std::stoull(m[3]), std::stoull(m[4])};
    }
  }
  ADD_FAILURE() << function << " has no entry in\n" << call_graph;
  return parents;
}

// The weight one count may carry (profil run -v): above the kernel tick on
// the CPU-time clock a signal counts several (tests/run_test.cc).
double weight_bound(const std::string& err) {
  std::smatch m;
  if (!std::regex_search(err, m, std::regex(R"(samples \([0-9.]+ s, ([a-z-]+) clock at ([0-9]+) Hz)"))) {
    ADD_FAILURE() << "no process line in:\n" << err;
    return 1;
  }
  return m[1] == "perf" || m[1] == "perf-signal" ? 1.0 : std::max(1.0, std::stod(m[2]) / 100.0);
}

std::string only_file(const fs::path& dir, const std::string& prefix, const std::string& suffix) {
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0 && name.size() >= suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      found.push_back(entry.path().string());
  }
  EXPECT_EQ(found.size(), 1u) << prefix << "*" << suffix << " in " << dir;
  return found.empty() ? "" : found.front();
}

// light's share of work's samples, checked against the truth.
void expect_split_by_cost(const std::string& call_graph, double w, const std::string& what) {
  const std::map<std::string, Parent> parents = parents_of(call_graph, "work");
  ASSERT_TRUE(parents.count("light") && parents.count("heavy")) << what << "\n" << call_graph;
  const Parent light = parents.at("light"), heavy = parents.at("heavy");
  const double n = static_cast<double>(light.called + heavy.called);
  ASSERT_GT(n, 100) << what << "\n" << call_graph;
  EXPECT_EQ(light.total, light.called + heavy.called) << "work has no other caller\n" << call_graph;
  // Counts are weighted (w per signal): the draws are n / w.
  const double share = static_cast<double>(light.called) / n;
  const double sigma = std::sqrt(kLightShare * (1 - kLightShare) / (n / w));
  // 5 sigma of binomial noise, and 2 points for what is not the loop
  // (calls, returns: a few instructions against 1,000 steps).
  EXPECT_NEAR(share, kLightShare, 5 * sigma + 0.02) << what << ": light " << light.called << ", heavy "
                                                    << heavy.called << "\n" << call_graph;
  // gprof propagates work's time along the arcs in the same proportion
  // (its columns are rounded to 0.01 s).
  const double time = light.self + heavy.self;
  ASSERT_GT(time, 0.1) << call_graph;
  EXPECT_NEAR(light.self / time, share, 0.02 / time + 1e-9) << call_graph;
  // Both callers hang under main.
  EXPECT_TRUE(parents_of(call_graph, "heavy").count("main")) << call_graph;
  EXPECT_TRUE(parents_of(call_graph, "light").count("main")) << call_graph;
}

TEST(GmonCallGraph, ArcsFromSamplesSplitTimeByCostNotByCalls) {
  TempDir dir;
  const std::string program = bin("call_split");
  Result r = run({bin("profil"), "run", "-v", "-o", dir.path().string(), "--hz", "1000", "--gmon", "--", program,
                  kRounds},
                 dir.path());
  ASSERT_EQ(r.status, 0) << r.err;
  const double w = weight_bound(r.err);
  const std::string gmon = only_file(dir.path(), "gmon.call_split.", ".out");
  ASSERT_FALSE(gmon.empty());
  Result g = run({"/usr/bin/gprof", "-q", "-b", program, gmon}, dir.path());
  ASSERT_EQ(g.status, 0) << g.err;
  EXPECT_EQ(g.err.find("call-graph"), std::string::npos) << g.err;
  expect_split_by_cost(g.out, w, "profil run --gmon");

  // profil report --format gmon writes the same arcs from the pprof file.
  const std::string pprof = only_file(dir.path(), "call_split.", ".pb.gz");
  const std::string again = (dir.path() / "again.gmon").string();
  Result e = run({bin("profil"), "report", "--format", "gmon", "-o", again, pprof}, dir.path());
  ASSERT_EQ(e.status, 0) << e.err;
  Result g2 = run({"/usr/bin/gprof", "-q", "-b", program, again}, dir.path());
  ASSERT_EQ(g2.status, 0) << g2.err;
  const auto from_run = parents_of(g.out, "work"), from_report = parents_of(g2.out, "work");
  ASSERT_EQ(from_run.size(), from_report.size()) << g2.out;
  for (const auto& [name, parent] : from_run) EXPECT_EQ(from_report.at(name).called, parent.called) << name;
}

// The comparison: the same program built with -pg (glibc's gmon counts
// every call), where gprof assumes each call of work takes the same time.
TEST(GmonCallGraph, PgSplitsTimeByCalls) {
  TempDir dir;
  const std::string program = bin("call_split_pg");
  // glibc writes PREFIX.PID there (gmon/gmon.c), not gmon.out in our cwd.
  Result r = run({program, kRounds}, dir.path(), {"GMON_OUT_PREFIX=" + (dir.path() / "pg").string()});
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string gmon = only_file(dir.path(), "pg.", "");
  ASSERT_FALSE(gmon.empty());
  Result g = run({"/usr/bin/gprof", "-q", "-b", program, gmon}, dir.path());
  ASSERT_EQ(g.status, 0) << g.err;
  const std::map<std::string, Parent> parents = parents_of(g.out, "work");
  ASSERT_TRUE(parents.count("light") && parents.count("heavy")) << g.out;
  EXPECT_EQ(parents.at("light").called, 50000u) << g.out;
  EXPECT_EQ(parents.at("heavy").called, 50000u) << g.out;
  // 50/50 whatever the steps: not the 10/90 the program spends.
  EXPECT_NEAR(parents.at("light").self, parents.at("heavy").self, 0.011) << g.out;
}

// What an arc counts, on a profile of known stacks (report_make_profile
// over the report tests' fixture, its library libreport_fixture.so):
// samples through each edge inside the program, once per sample however
// the stack recurses, among the samples the histogram holds.
TEST(GmonCallGraph, ArcsCountSamplesThroughEdgesInsideTheProgram) {
  TempDir dir;
  const std::string fixture = build_dir() + "/tests/report_fixtures/report_fixture_pie";
  const std::string profile = (dir.path() / "known.profraw").string(), gmon = (dir.path() / "known.gmon").string();
  Result m = run({bin("report_make_profile"), profile, fixture,
                  "hot_inner<-hot_outer<-main=600",
                  "hot_inner<-hot_inner<-hot_outer<-main=100",        // hot_inner calls itself
                  "hot_inner<-fixture_library_work<-main=50",         // through the library
                  "fixture_library_work<-hot_outer<-main=40",         // leaf in the library
                  "local_helper<-main=30"},
                 dir.path());
  ASSERT_EQ(m.status, 0) << m.err;
  Result e = run({bin("profil"), "report", "--format", "gmon", "-o", gmon, profile}, dir.path());
  ASSERT_EQ(e.status, 0) << e.err;
  Result g = run({"/usr/bin/gprof", "-q", "-b", fixture, gmon}, dir.path());
  ASSERT_EQ(g.status, 0) << g.err;
  // hot_inner: 700 samples came from hot_outer (the recursive stack once);
  // the 50 under the library have no caller in the program.
  const auto inner = parents_of(g.out, "hot_inner");
  ASSERT_TRUE(inner.count("hot_outer")) << g.out;
  EXPECT_EQ(inner.at("hot_outer").called, 700u) << g.out;
  EXPECT_EQ(inner.at("hot_outer").total, 700u) << g.out;
  EXPECT_FALSE(inner.count("fixture_library_work")) << g.out;
  // Its self-recursion: gprof's "calls+self" on the primary line.
  EXPECT_TRUE(std::regex_search(g.out, std::regex(R"(\n\[[0-9]+\][ 0-9.]+700\+100\s+hot_inner \[)"))) << g.out;
  // hot_outer: from main 700, not the 40 whose leaf is in the library
  // (outside the histogram, so outside the time gprof shares out).
  const auto outer = parents_of(g.out, "hot_outer");
  ASSERT_TRUE(outer.count("main")) << g.out;
  EXPECT_EQ(outer.at("main").called, 700u) << g.out;
  const auto helper = parents_of(g.out, "local_helper");
  ASSERT_TRUE(helper.count("main")) << g.out;
  EXPECT_EQ(helper.at("main").called, 30u) << g.out;
  // Without recursion the time gprof propagates is the arc's samples:
  // local_helper's 30 samples at 1000 Hz are main's 0.03 s of children.
  EXPECT_NEAR(helper.at("main").self + helper.at("main").children, 0.03, 0.0051) << g.out;
}

}  // namespace
