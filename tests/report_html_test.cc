// The HTML report opened in a real browser: headless Chromium loads the
// page (from a file, no network), runs its script and dumps the DOM, in
// which the summary, the sortable table and the charts must be.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "report/report.h"

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
  // Writes the fixture's exact profile (report_make_profile's SPECs) and its
  // HTML report; returns the page.
  std::string make_report(const std::string& specs =
                              " hot_inner=600 hot_inner+8=100 hot_outer=300 local_helper=50 main=30"
                              " fixture_library_work=15 zero_size_first+3=5 @nowhere=4",
                          const std::string& report_options = "") {
    std::string profile = dir_ + "/app.profraw", html = dir_ + "/report.html";
    std::string fixture = build_ + "/tests/report_fixtures/report_fixture_pie";
    int status = 0;
    capture(build_ + "/bin/report_make_profile " + profile + " " + fixture + specs, &status);
    EXPECT_EQ(status, 0);
    capture(build_ + "/bin/profil report --format html " + report_options + " -o " + html + " " + profile, &status);
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

// The flame graph, driven as a person would: the test adds two scripts to
// its copy of the page. The first runs before the page's own: headless
// Chromium's virtual time (--virtual-time-budget, which runs the page's
// timers at once) produces no animation frames, so d3's transitions would
// never end; frames are taken from timers instead. The second, after the
// page, hovers a frame, searches, clicks to zoom, resets and switches to
// the flame, with a pause between steps, and writes what each step left in
// the DOM as tab-separated lines into <pre id="flame-graph-test">, which
// --dump-dom prints. --force-prefers-reduced-motion: the page then draws
// without animation, as it would for a user who asked for none.
constexpr const char* kFramesFromTimers =
    "<script>window.requestAnimationFrame=function(f){return setTimeout(function(){f(performance.now());},16);};"
    "</script>";
constexpr const char* kDriver = R"(<script>
(function(){
  var out=[], graph=document.getElementById('flame-graph');
  function log(){ out.push(Array.prototype.join.call(arguments,'\t')); }
  function frames(step){
    graph.querySelectorAll('svg g.frame').forEach(function(g){
      var d=d3.select(g).datum(), names=[], rect=g.querySelector('rect');
      for(var a=d;a;a=a.parent) names.unshift(g.ownerDocument.flameNames[a.data.n]);
      var y=/translate\([^,]*,([^)]*)\)/.exec(g.getAttribute('transform'));
      log('frame',step,names.join(';'),g.getAttribute('width'),rect.getAttribute('width'),
          g.querySelector('div').textContent,y?y[1]:'',rect.getAttribute('fill'));
    });
  }
  function find(p){
    var found=null;
    graph.querySelectorAll('svg g.frame').forEach(function(g){
      var names=[]; for(var a=d3.select(g).datum();a;a=a.parent) names.unshift(document.flameNames[a.data.n]);
      if(names.join(';')===p) found=g;
    });
    return found;
  }
  document.flameNames=JSON.parse(document.getElementById('flame-graph-data').textContent).names;
  var steps=[
    function(){ log('ready',graph.getAttribute('data-ready'),graph.getAttribute('data-orientation'),
                    graph.querySelectorAll('svg').length); frames('drawn'); },
    function(){ find('all;main;hot_outer;hot_inner').dispatchEvent(new MouseEvent('mouseover',{bubbles:true,clientX:200,clientY:100})); },
    function(){ var tip=document.querySelector('.d3-flame-graph-tip');
                log('tooltip',tip?tip.textContent.replace(/\n/g,'|'):'');
                log('details',document.getElementById('flame-graph-details').textContent);
                find('all;main;hot_outer;hot_inner').dispatchEvent(new MouseEvent('mouseout',{bubbles:true}));
                var s=document.getElementById('flame-graph-search'); s.value='hot_'; s.dispatchEvent(new Event('input')); },
    function(){ var m=document.getElementById('flame-graph-matches');
                log('search',m.getAttribute('data-samples'),m.textContent); frames('searched');
                var s=document.getElementById('flame-graph-search'); s.value=''; s.dispatchEvent(new Event('input'));
                find('all;main;hot_outer').dispatchEvent(new MouseEvent('click',{bubbles:true})); },
    function(){ log('zoomed',graph.getAttribute('data-zoomed')); frames('zoomed');
                // The click's sandwich (issue 35): each chart's frames as name=samples@depth.
                var sw=document.getElementById('flame-graph-sandwich');
                function drawn(id){ var all=[]; document.querySelectorAll('#'+id+' svg g.frame').forEach(function(g){
                  var d=d3.select(g).datum(); all.push(document.flameNames[d.data.n]+'='+d.data.v+'@'+d.depth); });
                  return all.sort().join(','); }
                log('sandwich',sw.hidden?'hidden':'shown',sw.getAttribute('data-function'),drawn('flame-graph-callers'),
                    drawn('flame-graph-callees'));
                document.getElementById('flame-graph-reset').click(); },
    function(){ frames('reset'); document.getElementById('flame-graph-toggle').click(); },
    function(){ log('orientation',graph.getAttribute('data-orientation')); frames('flame'); }
  ];
)";

// Ends a driver: runs its `steps` 500 ms apart, then writes what `log`
// gathered in `out` into <pre id="flame-graph-test">.
constexpr const char* kRunSteps = R"(
  steps.push(function(){ var pre=document.createElement('pre'); pre.id='flame-graph-test';
                         pre.textContent=out.join('\n'); document.body.appendChild(pre); });
  var i=0;
  function next(){
    try{ steps[i++](); }catch(e){ log('error',String(e)); i=steps.length-1; }
    if(i<steps.length) setTimeout(next,500);
  }
  setTimeout(next,500);
})();
</script>)";

// The page with the driver's scripts, in headless Chromium (no animation,
// virtual time): what the driver wrote, a line per entry; *dom the page.
std::vector<std::string> drive(const std::string& dir, std::string page, const std::string& driver,
                               const std::string& chromium, std::string* dom_out) {
  const size_t head = page.find("<head>"), end = page.rfind("</body>");
  EXPECT_TRUE(head != std::string::npos && end != std::string::npos);
  if (head == std::string::npos || end == std::string::npos) return {};
  page.insert(end, driver + kRunSteps);
  page.insert(head + 6, kFramesFromTimers);
  std::ofstream(dir + "/driven.html") << page;
  int status = 0;
  std::string dom = capture("timeout 90 " + chromium +
                                " --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking"
                                " --disable-component-update --disable-sync --force-prefers-reduced-motion"
                                " --window-size=1000,900 --virtual-time-budget=20000 --user-data-dir=" +
                                dir + "/chromium-profile --dump-dom file://" + dir + "/driven.html 2>/dev/null",
                            &status);
  EXPECT_EQ(status, 0) << "chromium failed";
  std::smatch result;
  if (!std::regex_search(dom, result, std::regex(R"(<pre id="flame-graph-test">([\s\S]*?)</pre>)"))) {
    ADD_FAILURE() << "the driver wrote nothing";
    return {};
  }
  *dom_out = dom;
  std::vector<std::string> lines;
  std::stringstream in(result[1].str());
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

struct Frame {
  double frame_width = 0, rect_width = 0, y = 0;
  std::string label, fill;
};

std::vector<std::string> split(const std::string& line, char separator) {
  std::vector<std::string> fields;
  std::stringstream in(line);
  std::string field;
  while (std::getline(in, field, separator)) fields.push_back(field);
  return fields;
}

TEST_F(HtmlReport, ChromiumDrawsTheFlameGraphOfTheStacks) {
  std::string chromium = find_chromium();
  if (chromium.empty()) GTEST_SKIP() << "chromium is not installed (scripts/install-deps.sh installs it)";
  // Known stacks, root first, with their samples; report_make_profile takes
  // them leaf first ("?" a truncated root, +8 an address inside hot_inner).
  const std::vector<std::pair<std::vector<std::string>, uint64_t>> stacks = {
      {{"main", "hot_outer", "hot_inner"}, 600}, {{"main", "hot_outer", "hot_inner+8"}, 100},
      {{"main", "hot_outer"}, 300},              {{"main", "local_helper"}, 50},
      {{"main", "fixture_library_work"}, 15},    {{"?", "hot_outer", "hot_inner"}, 20},
      {{"main"}, 30}};
  std::string specs;
  uint64_t all = 0;
  std::map<std::string, uint64_t> expected;  // path "all;main;..." -> total samples
  for (const auto& [frames, samples] : stacks) {
    std::string spec, path = "all";
    for (auto frame = frames.rbegin(); frame != frames.rend(); ++frame) spec += (spec.empty() ? "" : "<-") + *frame;
    specs += fmt::format(" '{}={}'", spec, samples);
    expected["all"] += samples;
    for (const std::string& frame : frames) {
      std::string name = frame == "?" ? "[truncated]" : frame.substr(0, frame.find('+'));
      path += ";" + name;
      expected[path] += samples;
    }
    all += samples;
  }
  std::string page = make_report(specs);
  ASSERT_FALSE(page.empty());
  // The library is inlined, not fetched.
  EXPECT_NE(page.find("<script id=\"flame-graph-library\">"), std::string::npos);
  EXPECT_NE(page.find("d3-flame-graph 5."), std::string::npos);
  std::string dom;
  const std::vector<std::string> driven = drive(dir_, page, kDriver, chromium, &dom);
  ASSERT_FALSE(driven.empty());
  std::string seen;
  for (const std::string& line : driven) seen += line + "\n";
  SCOPED_TRACE("what the driver saw:\n" + seen);
  std::map<std::string, std::map<std::string, Frame>> steps;  // step -> path -> frame
  std::map<std::string, std::vector<std::string>> lines;      // kind -> fields
  for (const std::string& line : driven) {
    std::vector<std::string> f = split(line, '\t');
    ASSERT_FALSE(f.empty());
    EXPECT_NE(f[0], "error") << line;
    if (f[0] == "frame" && f.size() >= 8)
      steps[f[1]][f[2]] = {std::strtod(f[3].c_str(), nullptr), std::strtod(f[4].c_str(), nullptr),
                           std::strtod(f[6].c_str(), nullptr), f[5], f[7]};
    else
      lines[f[0]] = f;
  }
  ASSERT_EQ(lines["ready"].size(), 4u);
  EXPECT_EQ(lines["ready"][1], "1");      // the page's script ran to its end
  EXPECT_EQ(lines["ready"][2], "icicle");  // root at the top first
  EXPECT_EQ(lines["ready"][3], "1");      // one SVG

  // Every path of the stacks is one frame, and its width is its share of the
  // root's: the samples of the stacks through it.
  const auto& drawn = steps["drawn"];
  ASSERT_EQ(drawn.size(), expected.size());
  const double width = drawn.at("all").frame_width;
  EXPECT_GT(width, 300);
  for (const auto& [path, samples] : expected) {
    ASSERT_TRUE(drawn.count(path)) << path;
    const Frame& frame = drawn.at(path);
    double share = static_cast<double>(samples) / static_cast<double>(all);
    EXPECT_NEAR(frame.frame_width / width, share, 1e-9) << path;
    EXPECT_NEAR(frame.rect_width, frame.frame_width, 1e-6) << path << ": the drawing finished";
    // Frames wide enough for a label carry their name.
    std::string name = path.substr(path.rfind(';') + 1);
    if (frame.frame_width >= 35) {
      EXPECT_EQ(frame.label, name) << path;
    }
  }
  // Icicle: the root at the top, each callee below its caller.
  EXPECT_EQ(drawn.at("all").y, 0);
  EXPECT_GT(drawn.at("all;main").y, drawn.at("all").y);
  EXPECT_GT(drawn.at("all;main;hot_outer").y, drawn.at("all;main").y);

  // Hover: the frame's total and self samples, each with its share of all
  // samples and that share's 95 % Wilson interval.
  const uint64_t hot_inner = expected.at("all;main;hot_outer;hot_inner");
  const profiling::report::Interval interval = profiling::report::wilson_interval(hot_inner, all);
  const std::string share = fmt::format("{} samples, {:.2f} % (95 %: {:.2f}\u2013{:.2f} %)", hot_inner,
                                        100.0 * hot_inner / all, interval.low, interval.high);
  ASSERT_EQ(lines["tooltip"].size(), 2u);
  EXPECT_EQ(lines["tooltip"][1], "hot_inner (report_fixture_pie)|total: " + share + "|self: " + share);
  ASSERT_EQ(lines["details"].size(), 2u);
  EXPECT_NE(lines["details"][1].find("total " + share), std::string::npos) << lines["details"][1];

  // Search: every frame that matches is highlighted; the sum counts a match
  // inside another match once (hot_inner inside hot_outer).
  ASSERT_GE(lines["search"].size(), 2u);
  EXPECT_EQ(lines["search"][1], std::to_string(expected.at("all;main;hot_outer") +
                                               expected.at("all;[truncated];hot_outer")));
  size_t highlighted = 0;
  for (const auto& [path, frame] : steps["searched"]) {
    bool match = path.find(";hot_", path.rfind(';')) != std::string::npos;
    EXPECT_EQ(frame.fill == "#E600E6", match) << path;
    highlighted += match;
  }
  EXPECT_EQ(highlighted, 4u);

  // Click: the frame fills the width, its callees keep their proportions,
  // frames beside it are gone and its callers stay, full width.
  ASSERT_EQ(lines["zoomed"].size(), 2u);
  EXPECT_EQ(lines["zoomed"][1], "hot_outer");
  // The click also drew hot_outer's sandwich: its callers (main, and the
  // truncated stacks' root) above it, its callee hot_inner below, each
  // with the samples of those stacks.
  ASSERT_EQ(lines["sandwich"].size(), 5u);
  EXPECT_EQ(lines["sandwich"][1], "shown");
  EXPECT_EQ(lines["sandwich"][2], "hot_outer");
  const uint64_t outer = expected.at("all;main;hot_outer") + expected.at("all;[truncated];hot_outer");
  EXPECT_EQ(lines["sandwich"][3], fmt::format("[truncated]={}@1,hot_outer={}@0,main={}@1",
                                              expected.at("all;[truncated];hot_outer"), outer,
                                              expected.at("all;main;hot_outer")));
  EXPECT_EQ(lines["sandwich"][4], fmt::format("hot_inner={}@1,hot_outer={}@0",
                                              expected.at("all;main;hot_outer;hot_inner") +
                                                  expected.at("all;[truncated];hot_outer;hot_inner"),
                                              outer));
  const auto& zoomed = steps["zoomed"];
  ASSERT_TRUE(zoomed.count("all;main;hot_outer"));
  EXPECT_NEAR(zoomed.at("all;main;hot_outer").frame_width, width, 1e-6);
  EXPECT_NEAR(zoomed.at("all;main").frame_width, width, 1e-6);
  EXPECT_NEAR(zoomed.at("all;main;hot_outer;hot_inner").frame_width / width,
              static_cast<double>(hot_inner) / static_cast<double>(expected.at("all;main;hot_outer")), 1e-9);
  EXPECT_FALSE(zoomed.count("all;main;local_helper"));
  EXPECT_FALSE(zoomed.count("all;[truncated]"));
  // Reset: every frame back.
  EXPECT_EQ(steps["reset"].size(), expected.size());

  // The toggle: a flame, the root at the bottom, each callee above its caller.
  ASSERT_EQ(lines["orientation"].size(), 2u);
  EXPECT_EQ(lines["orientation"][1], "flame");
  const auto& flame = steps["flame"];
  ASSERT_EQ(flame.size(), expected.size());
  for (const auto& [path, frame] : flame) EXPECT_LE(frame.y, flame.at("all").y) << path;
  EXPECT_LT(flame.at("all;main").y, flame.at("all").y);
  EXPECT_LT(flame.at("all;main;hot_outer").y, flame.at("all;main").y);
}

// profil diff --format html: the differential flame graph in Chromium.
// The new profile's stacks are drawn; a frame whose share grew is red,
// one that shrank blue, a new one orange (d3-flame-graph's
// differentialColorMapper), one within the noise grey.
constexpr const char* kDiffDriver = R"(<script>
(function(){
  var out=[], graph=document.getElementById('flame-graph');
  function log(){ out.push(Array.prototype.join.call(arguments,'\t')); }
  var names=JSON.parse(document.getElementById('flame-graph-data').textContent).names;
  function path(g){ var p=[]; for(var a=d3.select(g).datum();a;a=a.parent) p.unshift(names[a.data.n]); return p.join(';'); }
  function find(p){ var f=null; graph.querySelectorAll('svg g.frame').forEach(function(g){ if(path(g)===p) f=g; }); return f; }
  function frames(kind){
    graph.querySelectorAll('svg g.frame').forEach(function(g){
      var d=d3.select(g).datum();
      log(kind,path(g),g.querySelector('rect').getAttribute('fill'),d.data.v,d.data.b,('d' in d.data)?d.data.d:'');
    });
  }
  var steps=[
    function(){ log('ready',graph.getAttribute('data-ready'),graph.getAttribute('data-differential'));
                frames('frame');
                find('all;main;hot_outer;hot_inner').dispatchEvent(new MouseEvent('mouseover',{bubbles:true,clientX:200,clientY:100})); },
    function(){ var tip=document.querySelector('.d3-flame-graph-tip');
                log('tooltip',tip?tip.textContent.replace(/\n/g,'|'):'');
                find('all;main;hot_outer;hot_inner').dispatchEvent(new MouseEvent('mouseout',{bubbles:true}));
                document.getElementById('flame-graph-shape').click(); },
    function(){ log('shape',graph.getAttribute('data-shape')); frames('base'); }
  ];
)";

TEST_F(HtmlReport, ChromiumDrawsTheDifferentialFlameGraph) {
  std::string chromium = find_chromium();
  if (chromium.empty()) GTEST_SKIP() << "chromium is not installed (scripts/install-deps.sh installs it)";
  const std::string fixture = build_ + "/tests/report_fixtures/report_fixture_pie";
  const std::string base = dir_ + "/base.profraw", changed = dir_ + "/new.profraw", html = dir_ + "/diff.html";
  int status = 0;
  // hot_inner grows (45 % -> 67 % of the samples), local_helper shrinks
  // (23 % -> 3 %) and loses its call of hot_inner, fixture_library_work is
  // new, hot_outer's own 300 stay.
  capture(build_ + "/bin/report_make_profile " + base + " " + fixture +
              " 'hot_inner<-hot_outer<-main=600' 'hot_outer<-main=300' 'local_helper<-main=300'"
              " 'hot_inner<-local_helper<-main=100' main=30",
          &status);
  ASSERT_EQ(status, 0);
  capture(build_ + "/bin/report_make_profile " + changed + " " + fixture +
              " 'hot_inner<-hot_outer<-main=1200' 'hot_outer<-main=300' 'local_helper<-main=50'"
              " 'fixture_library_work<-main=200' main=30",
          &status);
  ASSERT_EQ(status, 0);
  capture(build_ + "/bin/profil diff --format html -o " + html + " " + base + " " + changed, &status);
  ASSERT_EQ(status, 0);
  std::ifstream in(html);
  std::stringstream text;
  text << in.rdbuf();
  std::string page = text.str();
  ASSERT_FALSE(page.empty());
  EXPECT_NE(page.find("<h2>Differential flame graph</h2>"), std::string::npos);
  EXPECT_NE(page.find("base: <code>" + base + "</code>"), std::string::npos);
  EXPECT_NE(page.find("new: <code>" + changed + "</code>"), std::string::npos);
  EXPECT_EQ(page.find("<script src"), std::string::npos);  // self-contained
  std::string dom;
  const std::vector<std::string> driven = drive(dir_, page, kDiffDriver, chromium, &dom);
  ASSERT_FALSE(driven.empty());
  std::string seen;
  for (const std::string& line : driven) seen += line + "\n";
  SCOPED_TRACE("what the driver saw:\n" + seen);
  std::map<std::string, std::vector<std::string>> frames, base_frames, lines;
  for (const std::string& line : driven) {
    std::vector<std::string> f = split(line, '\t');
    ASSERT_FALSE(f.empty());
    EXPECT_NE(f[0], "error") << line;
    if (f[0] == "frame" && f.size() >= 5)
      frames[f[1]] = f;
    else if (f[0] == "base" && f.size() >= 5)
      base_frames[f[1]] = f;
    else
      lines[f[0]] = f;
  }
  ASSERT_EQ(lines["ready"].size(), 3u);
  EXPECT_EQ(lines["ready"][1], "1");
  EXPECT_EQ(lines["ready"][2], "1");
  // The new profile's shape: its six paths, not the base's
  // local_helper -> hot_inner.
  EXPECT_EQ(frames.size(), 6u);
  EXPECT_FALSE(frames.count("all;main;local_helper;hot_inner"));
  auto rgb = [](const std::string& fill) {
    std::smatch m;
    std::array<int, 3> c{-1, -1, -1};
    if (std::regex_search(fill, m, std::regex(R"(rgb\((\d+)\s*,\s*(\d+)\s*,\s*(\d+)\))")))
      c = {std::stoi(m[1]), std::stoi(m[2]), std::stoi(m[3])};
    return c;
  };
  auto colour_of = [](const std::array<int, 3>& c) -> std::string {
    if (c[0] == 255 && c[1] == 190 && c[2] == 90) return "orange";
    if (c[0] == 220 && c[1] == 220 && c[2] == 220) return "grey";
    if (c[0] > c[1] && c[1] == c[2]) return "red";
    if (c[2] > c[0] && c[0] == c[1]) return "blue";
    return "other";
  };
  auto expect_colour_in = [&](std::map<std::string, std::vector<std::string>>& drawn, const std::string& path,
                              const std::string& what) {
    ASSERT_TRUE(drawn.count(path)) << path;
    EXPECT_EQ(colour_of(rgb(drawn[path][2])), what) << path << ": " << drawn[path][2];
  };
  auto expect_colour = [&](const std::string& path, const std::string& what) { expect_colour_in(frames, path, what); };
  // Coloured by the change of each frame's self samples (issue 35):
  // hot_outer's own 300 stay, so it stays grey though its total grew with
  // hot_inner and its share of the samples fell.
  expect_colour("all;main;hot_outer;hot_inner", "red");
  expect_colour("all;main;hot_outer", "grey");
  expect_colour("all;main;local_helper", "blue");
  expect_colour("all;main;fixture_library_work", "orange");
  expect_colour("all;main", "grey");  // its own 30 on both sides
  EXPECT_EQ(frames["all;main;hot_outer;hot_inner"][3], "1200");
  EXPECT_EQ(frames["all;main;hot_outer;hot_inner"][4], "600");
  // Hover: both sides and the verdict.
  ASSERT_EQ(lines["tooltip"].size(), 2u);
  EXPECT_NE(lines["tooltip"][1].find("|base: 600 samples, 45.11 %; self 600|self change: +600 samples, q = "),
            std::string::npos)
      << lines["tooltip"][1];
  EXPECT_NE(lines["tooltip"][1].find(", changed|share change: +22.30 points of share, q = "), std::string::npos)
      << lines["tooltip"][1];
  // The base's shape: the lost path drawn, blue; the new function gone.
  ASSERT_EQ(lines["shape"].size(), 2u);
  EXPECT_EQ(lines["shape"][1], "base");
  EXPECT_EQ(base_frames.size(), 6u);
  expect_colour_in(base_frames, "all;main;local_helper;hot_inner", "blue");
  expect_colour_in(base_frames, "all;main;local_helper", "blue");
  expect_colour_in(base_frames, "all;main;hot_outer;hot_inner", "red");
  EXPECT_FALSE(base_frames.count("all;main;fixture_library_work"));
  // The rows' table is there.
  EXPECT_NE(dom.find("<th>q (seconds)</th>"), std::string::npos);
}

// The address-space charts label their hottest columns; functions next to
// each other in the object make hot columns side by side, whose labels
// were drawn over each other. The page as Chromium lays it out: every
// label's box, no two of one chart overlapping.
constexpr const char* kLabelDriver = R"(<script>
(function(){
  var out=[];
  function log(){ out.push(Array.prototype.join.call(arguments,'\t')); }
  var steps=[function(){
    document.querySelectorAll('svg.address-space').forEach(function(svg,chart){
      var size=svg.getBoundingClientRect();
      svg.querySelectorAll('text.label').forEach(function(text){
        var box=text.getBBox();
        log('label',chart,box.x,box.y,box.width,box.height,size.width,text.textContent);
      });
    });
  }];
)";

TEST_F(HtmlReport, ChromiumDrawsTheAddressChartsLabelsApart) {
  std::string chromium = find_chromium();
  if (chromium.empty()) GTEST_SKIP() << "chromium is not installed (scripts/install-deps.sh installs it)";
  // Three neighbouring functions of the fixture, nearly equally hot.
  std::string page = make_report(" hot_inner=600 hot_outer=550 local_helper=500 main=450");
  ASSERT_FALSE(page.empty());
  std::string dom;
  const std::vector<std::string> driven = drive(dir_, page, kLabelDriver, chromium, &dom);
  struct Label {
    double left, top, right, bottom;
    std::string text;
  };
  std::map<std::string, std::vector<Label>> charts;
  std::string seen;
  for (const std::string& line : driven) {
    seen += line + "\n";
    std::vector<std::string> f = split(line, '\t');
    ASSERT_FALSE(f.empty());
    ASSERT_NE(f[0], "error") << line;
    ASSERT_EQ(f.size(), 8u) << line;
    const double x = std::strtod(f[2].c_str(), nullptr), y = std::strtod(f[3].c_str(), nullptr);
    const double w = std::strtod(f[4].c_str(), nullptr), h = std::strtod(f[5].c_str(), nullptr);
    EXPECT_GE(x, 0) << line;  // inside the chart
    EXPECT_LE(x + w, std::strtod(f[6].c_str(), nullptr)) << line;
    charts[f[1]].push_back({x, y, x + w, y + h, f[7]});
  }
  SCOPED_TRACE("labels:\n" + seen);
  size_t most = 0;
  for (const auto& [chart, labels] : charts) {
    most = std::max(most, labels.size());
    for (size_t i = 0; i < labels.size(); ++i)
      for (size_t j = i + 1; j < labels.size(); ++j) {
        const Label &a = labels[i], &b = labels[j];
        EXPECT_FALSE(a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom)
            << a.text << " and " << b.text << " overlap";
        EXPECT_NE(a.text, b.text);  // a function is labelled once
      }
  }
  EXPECT_GE(most, 2u);  // the program's chart labels its neighbouring columns
}

// --threads in the flame graph: each thread a frame under the root, named
// "name tid", as wide as its samples, its stacks above it.
constexpr const char* kThreadsDriver = R"(<script>
(function(){
  var out=[], graph=document.getElementById('flame-graph');
  function log(){ out.push(Array.prototype.join.call(arguments,'\t')); }
  var names=JSON.parse(document.getElementById('flame-graph-data').textContent).names;
  var steps=[function(){
    graph.querySelectorAll('svg g.frame').forEach(function(g){
      var path=[];
      for(var a=d3.select(g).datum();a;a=a.parent) path.unshift(names[a.data.n]);
      log('frame',path.join(';'),g.getAttribute('width'));
    });
  }];
)";

TEST_F(HtmlReport, ChromiumDrawsEachThreadAsARootOfTheFlameGraph) {
  std::string chromium = find_chromium();
  if (chromium.empty()) GTEST_SKIP() << "chromium is not installed (scripts/install-deps.sh installs it)";
  std::string page = make_report(" 'hot_inner<-hot_outer<-main=600@101:worker' 'local_helper<-main=200@101:worker'"
                                 " 'hot_outer<-main=300@100:app'",
                                 "--threads");
  ASSERT_FALSE(page.empty());
  std::string dom;
  const std::vector<std::string> driven = drive(dir_, page, kThreadsDriver, chromium, &dom);
  std::map<std::string, double> width;  // path -> frame width
  std::string seen;
  for (const std::string& line : driven) {
    seen += line + "\n";
    std::vector<std::string> f = split(line, '\t');
    ASSERT_EQ(f.size(), 3u) << line;
    width[f[1]] = std::strtod(f[2].c_str(), nullptr);
  }
  SCOPED_TRACE("frames:\n" + seen);
  ASSERT_TRUE(width.count("all"));
  ASSERT_TRUE(width.count("all;worker 101"));
  ASSERT_TRUE(width.count("all;app 100"));
  const double all = width.at("all");
  EXPECT_NEAR(width.at("all;worker 101") / all, 800.0 / 1100.0, 1e-9);
  EXPECT_NEAR(width.at("all;app 100") / all, 300.0 / 1100.0, 1e-9);
  // Each thread's stacks above it, root first.
  EXPECT_NEAR(width.at("all;worker 101;main;hot_outer;hot_inner") / all, 600.0 / 1100.0, 1e-9);
  EXPECT_NEAR(width.at("all;worker 101;main;local_helper") / all, 200.0 / 1100.0, 1e-9);
  EXPECT_NEAR(width.at("all;app 100;main;hot_outer") / all, 300.0 / 1100.0, 1e-9);
  // Nothing else under the root.
  for (const auto& [path, w] : width) {
    if (std::count(path.begin(), path.end(), ';') == 1) {
      EXPECT_TRUE(path == "all;worker 101" || path == "all;app 100") << path;
    }
  }
}

}  // namespace
