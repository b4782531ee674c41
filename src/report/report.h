// A flat profile: symbolized samples grouped into rows (by function, source
// line, object or instruction address), each with its share of all samples
// and the 95 % Wilson score interval of that share — the samples are a
// binomial draw from the program's time, so a share of k in n has an error
// (E. B. Wilson, "Probable inference...", JASA 22, 1927).
#ifndef PROFIL_REPORT_REPORT_H
#define PROFIL_REPORT_REPORT_H

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "format/profile.h"
#include "report/symbolizer.h"

namespace re2 {
class RE2;
}

namespace profiling::report {

// thread and process (issue 22): a row per thread ("name tid") or process
// ("name pid") with all its samples, from the stacks' roots.
enum class View { function, line, object, address, thread, process };
const char* view_name(View view);
// "function", "line", "object", "address", "thread", "process"; false for
// anything else.
bool parse_view(const std::string& text, View* view);

struct Interval {
  double low = 0, high = 0;  // percent
};
// The 95 % Wilson score interval of k successes in n trials, in percent.
Interval wilson_interval(uint64_t k, uint64_t n, double z = 1.959963984540054);
// The same of a share p (0..1) estimated from `draws` independent draws
// (not necessarily whole).
Interval wilson_share_interval(double p, double draws, double z = 1.959963984540054);
// The 95 % interval of a weighted share: count of total weighted samples,
// taken in `observations` of total_observations draws (signals or ring
// records; issue 22). Above the kernel tick one signal of the cpu clock
// counts for several periods: the share is count / total, but its noise is
// that of the draws. The draws the interval uses are the share's variance
// by the delta method for a ratio of weighted sums, each draw of a row
// weighing its row's mean weight and each other draw the others' mean:
//   var = [(1-p)^2 c^2/k + p^2 (C-c)^2/(n-k)] / C^2,  draws = p(1-p)/var,
// which is n when every draw weighs the same (16 periods each at 4 kHz on
// a 250 Hz kernel: an interval 4x as wide as one that takes the 16n counts
// for draws). total_observations 0 (a file without them): wilson_interval
// of the counts, as before.
Interval share_interval(uint64_t count, uint64_t observations, uint64_t total, uint64_t total_observations);
// The variance of that share (0..1 scale) as share_interval takes it:
// p(1-p)/total without observations.
double share_variance(uint64_t count, uint64_t observations, uint64_t total, uint64_t total_observations);

// One distinct sampled address, symbolized.
struct SymbolizedSample {
  uint64_t address = 0;  // runtime
  uint64_t count = 0;
  uint64_t observations = 0;  // the draws behind count (0 without observations)
  const format::Mapping* mapping = nullptr;
  Symbol symbol;
  SourceLine line;  // filled only when lines were asked for
};

// The profile with every distinct address symbolized once.
struct SymbolizedProfile {
  const format::Profile* profile = nullptr;
  uint64_t total = 0;  // saturates at 2^64-1
  // The draws behind total; 0 when the profile has no observations
  // (format::Profile::has_observations).
  uint64_t total_observations = 0;
  bool saturated = false;  // some count or the total passed 2^64-1 and stayed there
  std::vector<SymbolizedSample> samples;  // by address
};
// per_address false: consecutive addresses with the same symbol (and line,
// with_lines) are one entry at the first one's address, enough for every
// view but the address view and the HTML page's address chart.
SymbolizedProfile symbolize_profile(const format::Profile& profile, Symbolizer& symbolizer, bool with_lines,
                                    bool per_address = true);
// The one line on stderr saying that counts were shown saturated.
void warn_saturated();

struct Row {
  uint64_t samples = 0;
  double percent = 0;
  Interval interval;
  std::string function;     // empty in the object view
  std::string object;       // basename of the object
  std::string object_path;  // as the mapping names it
  std::string file;         // line view: source file
  int line = 0;             // line view: source line (0 unknown)
  uint64_t address = 0;     // address view: link-time address in the object
  std::string instruction;  // address view: disassembled instruction
  // Samples whose stack holds the row at least once (the function and all
  // it called: pprof's "cum"); percent of all samples. Rows by function
  // count inlined frames as functions of their own.
  uint64_t cumulative_samples = 0;
  double cumulative_percent = 0;
  std::string raw_function;  // as the symbol table spells it (symbol version kept)
  // Thread and process views: which (tid 0 in the process view), and the
  // name the profile gives it ("" unnamed).
  int32_t tid = 0, pid = 0;
  std::string task_name;
  // The draws (signals or ring records) behind samples; interval is
  // share_interval of them. 0 when the profile has no observations.
  uint64_t observations = 0;
};

struct Summary {
  uint64_t samples = 0;     // in all files
  uint64_t period_ns = 0;   // CPU time one sample stands for
  double rate_hz = 0;       // 1e9 / period_ns
  double cpu_seconds = 0;   // samples * period
  double wall_seconds = 0;  // duration of the profiles, 0 when unknown
  uint64_t dropped = 0;
  // Samples taken in profil's own code (its handler, its dump), left out of
  // samples and every row (format::Profile::own_samples).
  uint64_t own_samples = 0;
  std::string clock;
  std::string program;
  std::vector<std::string> files;
  size_t objects = 0;       // distinct objects sampled
  // The draws (signals or ring records) behind samples; 0 when the files
  // do not record them (issue 22).
  uint64_t observations = 0;
};

// The share of profil's own samples in the samples and them: 0..100.
double own_percent(const Summary& s);

// A --focus pattern, matched anywhere in a name (RE2 syntax: Perl-like,
// without backreferences). RE2 runs in time linear in the name and without
// recursion, so no name in a profile can crash the report; std::regex
// recursed once per character and overflowed the stack on long names
// (issue 11).
class FocusPattern {
 public:
  // Throws std::invalid_argument with RE2's reason when pattern is not valid.
  explicit FocusPattern(const std::string& pattern);
  bool found_in(const std::string& text) const;

 private:
  std::shared_ptr<const re2::RE2> re_;
};

struct ReportOptions {
  View view = View::function;
  size_t top = 0;            // 0: all rows
  double min_percent = 0;    // rows below are left out
  std::optional<FocusPattern> focus;  // rows whose function (or object in the object view) matches
  std::string focus_text;
  std::string objdump = "objdump";  // for the address view
  bool folded_objects = false;      // folded stacks: each frame as object`function
  // Stack filters (stacks.h StackFilter): --ignore drops the samples whose
  // stack has a matching frame, --hide removes matching frames; --focus
  // keeps the samples whose stack has one.
  std::optional<FocusPattern> ignore, hide;
  // --threads: each stack's thread as its root (tree, folded, flame graph).
  bool thread_roots = false;
  // --no-inlines (pprof's -noinlines): each address is the function the
  // symbol table names, at its own line there; inlined functions are not
  // frames (their samples are their outermost caller's).
  bool inline_frames = true;
};

class StackSet;  // stacks.h

struct Report {
  View view = View::function;
  // The stacks after --focus/--ignore/--hide, built once and read by every
  // view of stacks (folded, tree, flame graph); null for the address view.
  std::shared_ptr<const StackSet> stacks;
  ReportOptions options;  // as the report was built (the folded stacks apply them too)
  Summary summary;
  std::vector<Row> rows;  // hottest first, after top/min-percent/focus
  size_t rows_before_filter = 0;
  uint64_t samples_shown = 0;
};

Summary summarize(const SymbolizedProfile& symbolized, const std::vector<std::string>& files);
// Rows of the leaves alone (cumulative = self), filtered row by row; with
// stacks (stack_views.h stacks_for_report), the function, line and object
// views' rows come from them: inline frames, cumulative samples, and
// --focus/--ignore/--hide applied to whole stacks. The address view's rows
// are always its leaves.
Report build_report(const SymbolizedProfile& symbolized, const ReportOptions& options,
                    const std::vector<std::string>& files, std::shared_ptr<const StackSet> stacks = nullptr);

// The instructions of [start, end) of an object, disassembled by objdump(1)
// as perf annotate does: link-time address -> instruction text.
std::vector<std::pair<uint64_t, std::string>> disassemble(const std::string& objdump, const std::string& file,
                                                          uint64_t start, uint64_t end);

// `profil diff`: the change of each function between two profiles, in
// samples, seconds (samples x period) and share, self and cumulative.
struct DiffRow {
  std::string function, object;
  uint64_t base_samples = 0, new_samples = 0;
  double base_percent = 0, new_percent = 0;
  double delta = 0;          // new - base, percentage points
  double delta_error = 0;    // 95 % half-width of delta (normal approximation)
  double z = 0;              // two-proportion z statistic (pooled)
  double p_value = 1;        // two-sided: exact at small counts (diff_test), else from z
  // Appended for issue 22: seconds, the change in samples and seconds,
  // cumulative (samples of the stacks through the function) with the same
  // test, and whether each change is outside the sampling noise (p < 0.05).
  double base_seconds = 0, new_seconds = 0;
  int64_t delta_samples = 0;
  double delta_seconds = 0;
  bool significant = false;
  uint64_t base_cumulative = 0, new_cumulative = 0;
  double base_cumulative_percent = 0, new_cumulative_percent = 0;
  double cumulative_delta = 0;  // percentage points
  double cumulative_z = 0, cumulative_p_value = 1;
  bool cumulative_significant = false;
  // Appended after them: the self seconds' test (poisson_rate_test on the
  // self samples, exposures the sampling rates, times the wall durations
  // with Diff::per_wall_second), and each test's p value adjusted for the
  // false discovery rate across the rows (benjamini_hochberg). The
  // `significant` flags above and rate_significant are q < kDiffLevel.
  double rate_z = 0, rate_p_value = 1, rate_q_value = 1;
  bool rate_significant = false;
  double q_value = 1, cumulative_q_value = 1;
  // Appended after them (issue 22): the draws (signals or ring records)
  // behind the self samples. When both profiles have them every test is
  // of the draws: the shares' (diff_test) of self and cumulative draws,
  // the rate test's of the self draws with each side's exposure divided
  // by its mean weight (periods per draw), and delta_error from
  // share_variance; otherwise of the samples, as before (0 here).
  uint64_t base_observations = 0, new_observations = 0;
};
// The false discovery rate a diff's "changed" verdicts are held to.
inline constexpr double kDiffLevel = 0.05;
struct Diff {
  Summary base, changed;
  std::vector<DiffRow> rows;  // gainers by decreasing z, then losers by increasing z
  // The rate test compared samples per wall second (each profile's
  // duration) rather than per run.
  bool per_wall_second = false;
  // Both sides' stacks, for the differential flame graph (render_diff_html);
  // null when the diff was made from flat profiles.
  std::shared_ptr<const StackSet> base_stacks, new_stacks;
};
struct DiffOptions {
  // Compare each function's rate per second of the profiles' wall
  // durations (profiles of different lengths: profil attach --duration)
  // instead of its seconds per run. Needs both durations.
  bool per_wall_second = false;
};
// Rows from the leaves alone (cumulative = self).
Diff diff_profiles(const SymbolizedProfile& base, const SymbolizedProfile& changed, DiffOptions options = {});
// Rows from both sides' stacks (stacks.h): inline frames are functions,
// and cumulative counts each stack once per function it passes through.
// The summaries are the sides' (their files named).
Diff diff_stacks(const StackSet& base, const StackSet& changed, const Summary& base_summary,
                 const Summary& new_summary, DiffOptions options = {});

// Is k2 of n2 against k1 of n1 a change of share beyond sampling noise?
// The two-sided p value: Fisher's exact test (k2 hypergeometric given
// k1 + k2) while k1 + k2 <= kExactTestLimit, where the z test's normal
// approximation is too liberal (0 -> 4 samples of equal totals has z = 2.0
// but happens about 1 time in 8); from the pooled z statistic above it.
// z is returned in *z either way.
inline constexpr uint64_t kExactTestLimit = 1000;
double diff_test(uint64_t k1, uint64_t n1, uint64_t k2, uint64_t n2, double* z);

// Did a Poisson rate change? k1 events over exposure e1 against k2 over
// e2 (exposures in any one unit: samples per CPU second for seconds per
// run, times the wall seconds for a rate per second). Conditional on
// m = k1 + k2, equal rates make k2 Bin(m, e2 / (e1 + e2)) (Przyborowski
// and Wilenski 1940; R's poisson.test), free of the unknown rate. The
// two-sided p value: exact (every outcome no likelier than k2, as
// binom.test) while m <= kExactTestLimit, from the normal approximation
// above; *z = (k2 - m q) / sqrt(m q (1 - q)). p = 1 without exposure.
double poisson_rate_test(uint64_t k1, double e1, uint64_t k2, double e2, double* z);

// Benjamini-Hochberg adjusted p values (q values): rows whose q < alpha
// are a set whose expected share of false discoveries is at most alpha,
// for independent or positively dependent tests (Benjamini and Hochberg
// 1995; R's p.adjust(method = "BH")). A diff tests every function at
// once (a cc1 profile has 1,539): at p < 0.05 alone, two profiles of one
// program would show dozens of "changed" rows of pure noise.
std::vector<double> benjamini_hochberg(const std::vector<double>& p_values);

}  // namespace profiling::report

#endif  // PROFIL_REPORT_REPORT_H
