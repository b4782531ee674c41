#include "report/diff.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "report/stacks.h"

namespace profiling::report {

double diff_test(uint64_t k1, uint64_t n1, uint64_t k2, uint64_t n2, double* z) {
  *z = 0;
  if (n1 == 0 || n2 == 0) return 1;
  const double a = static_cast<double>(k1), b = static_cast<double>(k2);
  const double m1 = static_cast<double>(n1), m2 = static_cast<double>(n2);
  const double pooled = (a + b) / (m1 + m2);
  const double se = std::sqrt(pooled * (1 - pooled) * (1 / m1 + 1 / m2));
  if (se > 0) *z = (b / m2 - a / m1) / se;
  const uint64_t m = k1 + k2;
  if (m == 0) return 1;
  if (m > kExactTestLimit) return std::erfc(std::fabs(*z) / std::sqrt(2.0));
  // Fisher's exact test: given the function's m samples in both (the
  // margins fixed), equal shares make k2 hypergeometric, m draws from the
  // n1 + n2 samples of which n2 are the new profile's. The two-sided p
  // value sums every outcome no likelier than the one seen (as R's
  // fisher.test). m <= kExactTestLimit: at most 1001 terms.
  const uint64_t low = m > n1 ? m - n1 : 0, high = std::min(m, n2);
  auto log_choose = [](double n, double k) { return std::lgamma(n + 1) - std::lgamma(k + 1) - std::lgamma(n - k + 1); };
  std::vector<double> log_pmf(high - low + 1);
  log_pmf[0] = log_choose(m2, static_cast<double>(low)) + log_choose(m1, static_cast<double>(m - low)) -
               log_choose(m1 + m2, static_cast<double>(m));
  for (uint64_t j = low; j < high; ++j) {
    const double jj = static_cast<double>(j), mm = static_cast<double>(m);
    // P(j+1)/P(j) = (m-j)(n2-j) / ((j+1)(n1-m+j+1))
    log_pmf[j - low + 1] =
        log_pmf[j - low] + std::log((mm - jj) * (m2 - jj) / ((jj + 1) * (m1 - mm + jj + 1)));
  }
  const double seen = log_pmf[k2 - low] + 1e-7;  // ties within rounding count as no likelier
  double p = 0;
  for (double l : log_pmf)
    if (l <= seen) p += std::exp(l);
  return std::min(1.0, p);
}

namespace {

// Two-sided exact binomial p value of k of m at probability q: the sum of
// every outcome no likelier than k (R's binom.test), the terms from the
// ratio of each to the one before (one log each; m <= kExactTestLimit).
double binomial_two_sided(uint64_t k, uint64_t m, double q) {
  const double mm = static_cast<double>(m), odds = std::log(q) - std::log1p(-q);
  std::vector<double> log_pmf(m + 1);
  log_pmf[0] = mm * std::log1p(-q);
  for (uint64_t j = 0; j < m; ++j) {
    const double jj = static_cast<double>(j);
    log_pmf[j + 1] = log_pmf[j] + std::log((mm - jj) / (jj + 1)) + odds;  // P(j+1)/P(j)
  }
  const double seen = log_pmf[k] + 1e-7;  // ties within rounding count as no likelier
  double p = 0;
  for (double l : log_pmf)
    if (l <= seen) p += std::exp(l);
  return std::min(1.0, p);
}

}  // namespace

double poisson_rate_test(uint64_t k1, double e1, uint64_t k2, double e2, double* z) {
  *z = 0;
  if (!(e1 > 0) || !(e2 > 0)) return 1;
  const uint64_t m = k1 + k2;
  if (m == 0) return 1;
  const double q = e2 / (e1 + e2), mm = static_cast<double>(m);
  *z = (static_cast<double>(k2) - mm * q) / std::sqrt(mm * q * (1 - q));
  if (m > kExactTestLimit) return std::erfc(std::fabs(*z) / std::sqrt(2.0));
  return binomial_two_sided(k2, m, q);
}

std::vector<double> benjamini_hochberg(const std::vector<double>& p_values) {
  const size_t n = p_values.size();
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p_values[a] < p_values[b]; });
  // q of the i-th smallest = min over j >= i of p_(j) n / j, capped at 1.
  std::vector<double> q(n);
  double running = 1;
  for (size_t rank = n; rank > 0; --rank) {
    const size_t i = order[rank - 1];
    running = std::min(running, p_values[i] * static_cast<double>(n) / static_cast<double>(rank));
    q[i] = running;
  }
  return q;
}

int diff_direction(const Diff& diff, const DiffRow& row) {
  const auto [base_exposure, new_exposure] = diff_exposures(diff);
  if (base_exposure > 0 && new_exposure > 0) return row.rate_significant ? (row.rate_z > 0 ? 1 : -1) : 0;
  return row.significant ? (row.z > 0 ? 1 : -1) : 0;
}

namespace {

struct Counts {
  uint64_t base = 0, changed = 0, base_cumulative = 0, new_cumulative = 0;
  // The draws behind each (issue 22); 0 when a side has none.
  uint64_t base_observations = 0, new_observations = 0, base_cumulative_observations = 0,
           new_cumulative_observations = 0;
};
// The draws behind each side's total; 0 when a side has none.
struct Draws {
  uint64_t base = 0, changed = 0;
  bool both() const { return base != 0 && changed != 0; }
};
using Key = std::pair<std::string, std::string>;  // (object basename, function)

}  // namespace

std::pair<double, double> diff_exposures(const Diff& diff) {
  auto rate = [](const Summary& s) { return s.period_ns ? 1e9 / static_cast<double>(s.period_ns) : 0.0; };
  double e1 = rate(diff.base), e2 = rate(diff.changed);
  if (diff.per_wall_second) {
    e1 *= diff.base.wall_seconds;
    e2 *= diff.changed.wall_seconds;
  }
  return {e1, e2};
}

namespace {

Diff diff_counts(const std::map<Key, Counts>& counts, uint64_t base_total, uint64_t new_total, Draws draws,
                 Diff diff) {
  const double n1 = static_cast<double>(base_total), n2 = static_cast<double>(new_total);
  const double base_period = static_cast<double>(diff.base.period_ns) / 1e9;
  const double new_period = static_cast<double>(diff.changed.period_ns) / 1e9;
  auto [base_exposure, new_exposure] = diff_exposures(diff);
  // Of draws, each side's exposure is in draws: a draw stands for the
  // side's mean weight in periods (16 at 4 kHz on a 250 Hz kernel), so a
  // rate of draws per period is the rate of samples over that weight.
  const bool of_draws = draws.both();
  if (of_draws) {
    base_exposure *= static_cast<double>(draws.base) / n1;
    new_exposure *= static_cast<double>(draws.changed) / n2;
  }
  const uint64_t base_draws = of_draws ? draws.base : 0, new_draws = of_draws ? draws.changed : 0;
  auto percent = [](uint64_t k, double n) { return n > 0 ? 100 * static_cast<double>(k) / n : 0; };
  for (const auto& [key, c] : counts) {
    DiffRow row;
    row.object = key.first;
    row.function = key.second;
    row.base_samples = c.base;
    row.new_samples = c.changed;
    row.base_percent = percent(c.base, n1);
    row.new_percent = percent(c.changed, n2);
    row.delta = row.new_percent - row.base_percent;
    if (n1 > 0 && n2 > 0)
      row.delta_error = 100 * 1.959963984540054 *
                        std::sqrt(share_variance(c.base, c.base_observations, base_total, base_draws) +
                                  share_variance(c.changed, c.new_observations, new_total, new_draws));
    if (of_draws) {
      row.base_observations = c.base_observations;
      row.new_observations = c.new_observations;
    }
    // The shares' test: of the draws when both sides have them (a weighted
    // count is no number of independent draws), else of the samples.
    row.p_value = of_draws ? diff_test(c.base_observations, draws.base, c.new_observations, draws.changed, &row.z)
                           : diff_test(c.base, base_total, c.changed, new_total, &row.z);
    row.base_seconds = static_cast<double>(c.base) * base_period;
    row.new_seconds = static_cast<double>(c.changed) * new_period;
    row.delta_samples = static_cast<int64_t>(c.changed) - static_cast<int64_t>(c.base);
    row.delta_seconds = row.new_seconds - row.base_seconds;
    row.base_cumulative = c.base_cumulative;
    row.new_cumulative = c.new_cumulative;
    row.base_cumulative_percent = percent(c.base_cumulative, n1);
    row.new_cumulative_percent = percent(c.new_cumulative, n2);
    row.cumulative_delta = row.new_cumulative_percent - row.base_cumulative_percent;
    row.cumulative_p_value =
        of_draws ? diff_test(c.base_cumulative_observations, draws.base, c.new_cumulative_observations, draws.changed,
                             &row.cumulative_z)
                 : diff_test(c.base_cumulative, base_total, c.new_cumulative, new_total, &row.cumulative_z);
    row.rate_p_value = of_draws ? poisson_rate_test(c.base_observations, base_exposure, c.new_observations,
                                                    new_exposure, &row.rate_z)
                                : poisson_rate_test(c.base, base_exposure, c.changed, new_exposure, &row.rate_z);
    diff.rows.push_back(std::move(row));
  }
  // Each test's verdicts held to a false discovery rate across the rows.
  auto adjust = [&](double DiffRow::*p, double DiffRow::*q, bool DiffRow::*significant) {
    std::vector<double> ps;
    ps.reserve(diff.rows.size());
    for (const DiffRow& row : diff.rows) ps.push_back(row.*p);
    const std::vector<double> qs = benjamini_hochberg(ps);
    for (size_t i = 0; i < diff.rows.size(); ++i) {
      diff.rows[i].*q = qs[i];
      diff.rows[i].*significant = qs[i] < kDiffLevel;
    }
  };
  adjust(&DiffRow::p_value, &DiffRow::q_value, &DiffRow::significant);
  adjust(&DiffRow::cumulative_p_value, &DiffRow::cumulative_q_value, &DiffRow::cumulative_significant);
  adjust(&DiffRow::rate_p_value, &DiffRow::rate_q_value, &DiffRow::rate_significant);
  std::stable_sort(diff.rows.begin(), diff.rows.end(), [](const DiffRow& a, const DiffRow& b) {
    bool a_gain = a.z > 0 || (a.z == 0 && a.delta > 0), b_gain = b.z > 0 || (b.z == 0 && b.delta > 0);
    if (a_gain != b_gain) return a_gain;
    if (a.z != b.z) return a_gain ? a.z > b.z : a.z < b.z;
    // No test possible (an empty profile): the larger change first.
    return std::fabs(a.delta) > std::fabs(b.delta);
  });
  return diff;
}

// Self and cumulative samples of each function of one side.
template <typename Field>
void count_stacks(const StackSet& set, std::map<Key, Counts>* counts, Field self, Field cumulative,
                  Field self_observations, Field cumulative_observations) {
  std::vector<Counts*> of(set.frames().size(), nullptr);
  for (size_t i = 0; i < set.frames().size(); ++i) {
    const StackFrame& f = set.frames()[i];
    if (f.function == format::kTruncatedFrame && f.object.empty()) continue;
    of[i] = &(*counts)[{object_basename(f.object), f.function}];
  }
  std::vector<Counts*> seen;
  for (const Stack& stack : set.stacks()) {
    if (Counts* leaf = of[stack.frames.back()]) {
      format::saturating_add(leaf->*self, stack.count);
      format::saturating_add(leaf->*self_observations, stack.observations);
    }
    seen.clear();
    for (FrameId id : stack.frames) {
      Counts* c = of[id];
      if (!c || std::find(seen.begin(), seen.end(), c) != seen.end()) continue;  // recursion counts once
      seen.push_back(c);
      format::saturating_add(c->*cumulative, stack.count);
      format::saturating_add(c->*cumulative_observations, stack.observations);
    }
  }
}

}  // namespace

Diff diff_profiles(const SymbolizedProfile& base, const SymbolizedProfile& changed, DiffOptions options) {
  std::map<Key, Counts> counts;
  for (const SymbolizedSample& s : base.samples) {
    Counts& c = counts[{object_basename(s.symbol.object), drop_symbol_version(s.symbol.function)}];
    format::saturating_add(c.base, s.count);
    format::saturating_add(c.base_cumulative, s.count);
    format::saturating_add(c.base_observations, s.observations);
    format::saturating_add(c.base_cumulative_observations, s.observations);
  }
  for (const SymbolizedSample& s : changed.samples) {
    Counts& c = counts[{object_basename(s.symbol.object), drop_symbol_version(s.symbol.function)}];
    format::saturating_add(c.changed, s.count);
    format::saturating_add(c.new_cumulative, s.count);
    format::saturating_add(c.new_observations, s.observations);
    format::saturating_add(c.new_cumulative_observations, s.observations);
  }
  Diff diff;
  diff.base = summarize(base, {});
  diff.changed = summarize(changed, {});
  diff.per_wall_second = options.per_wall_second;
  return diff_counts(counts, base.total, changed.total, {base.total_observations, changed.total_observations},
                     std::move(diff));
}

Diff diff_stacks(const StackSet& base, const StackSet& changed, const Summary& base_summary,
                 const Summary& new_summary, DiffOptions options) {
  std::map<Key, Counts> counts;
  count_stacks(base, &counts, &Counts::base, &Counts::base_cumulative, &Counts::base_observations,
               &Counts::base_cumulative_observations);
  count_stacks(changed, &counts, &Counts::changed, &Counts::new_cumulative, &Counts::new_observations,
               &Counts::new_cumulative_observations);
  Diff diff;
  diff.base = base_summary;
  diff.changed = new_summary;
  diff.per_wall_second = options.per_wall_second;
  return diff_counts(counts, base.total(), changed.total(),
                     {base.total_observations(), changed.total_observations()}, std::move(diff));
}

}  // namespace profiling::report
