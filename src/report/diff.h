// `profil diff`: each function's samples in two profiles, and whether the
// change of its share (diff_test) and of its seconds (poisson_rate_test) is
// more than sampling would give by chance, held to a false discovery rate
// across the rows (benjamini_hochberg). The flame graph's differential
// colours (flame_graph.h) are held to the same tests.
#ifndef PROFIL_REPORT_DIFF_H
#define PROFIL_REPORT_DIFF_H

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "report/report.h"

namespace profiling::report {

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

// What one sample of each side (base, new) is exposed to in the rate
// test: samples per CPU second (a change of seconds per run), times each
// profile's wall seconds with per_wall_second (of seconds per second);
// 0 where a side's period (or duration) is unknown: no test.
std::pair<double, double> diff_exposures(const Diff& diff);

// How a row is coloured, in every format: +1 slower, -1 faster, 0 within
// the noise. By its self seconds' test (the flame graph's rule, issue 35:
// a function whose time did not move is not coloured because another
// grew), or by its share's where the seconds cannot be tested (a profile
// without a period).
int diff_direction(const Diff& diff, const DiffRow& row);

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

#endif  // PROFIL_REPORT_DIFF_H
