#include "format/gmon_histogram.h"

#include <cmath>
#include <limits>

namespace profiling::format {

uint64_t GmonHistogram::bin_address(size_t i) const {
  if (bins.empty()) return low_pc;
  unsigned __int128 span = high_pc - low_pc;
  return low_pc + static_cast<uint64_t>(span * i / bins.size());
}

namespace gmon {
namespace {

// gprof's unit of scale: 2-byte units per bin, computed as hist.c's
// read_histogram_header does (integer division of the range first).
double gprof_scale(const GmonHistogram& h) {
  return static_cast<double>((h.high_pc - h.low_pc) / 2) / static_cast<double>(h.bins.size());
}

}  // namespace

std::string hex(uint64_t v) {
  static const char digits[] = "0123456789abcdef";
  std::string s;
  do {
    s.insert(s.begin(), digits[v & 0xf]);
    v >>= 4;
  } while (v);
  return "0x" + s;
}

std::string range_text(const GmonHistogram& h) {
  return "[" + hex(h.low_pc) + ", " + hex(h.high_pc) + ")";
}

void HistogramRules::add(const GmonHistogram& h) {
  if (h.bins.empty())
    fail("histogram " + range_text(h) + " has no bins (gprof divides its range by the bin count)");
  if (h.low_pc >= h.high_pc) fail("histogram " + range_text(h) + " covers no addresses");
  if (h.bins.size() > std::numeric_limits<uint32_t>::max())
    fail("histogram " + range_text(h) + " has more bins than its 32-bit count can hold");
  if (h.dimension.size() > gmon::kDimensionSize)
    fail("histogram dimension \"" + h.dimension + "\" is longer than 15 bytes");
  if (h.dimension.find('\0') != std::string::npos) fail("histogram dimension contains a NUL byte");
  if (!have_first_) {
    have_first_ = true;
    first_ = {h.low_pc, h.high_pc, h.rate_hz, h.dimension, h.dimension_abbrev, {}};
    first_scale_ = gprof_scale(h);
  } else {
    if (h.dimension != first_.dimension)
      fail("histogram dimension changed between records (\"" + first_.dimension + "\" then \"" +
           h.dimension + "\")");
    if (h.dimension_abbrev != first_.dimension_abbrev)
      fail("histogram dimension abbreviation changed between records");
    // gprof requires the same scale (bytes per bin) in every record, to
    // within 1e-6 units.
    if (std::fabs(gprof_scale(h) - first_scale_) > 0.000001)
      fail("histogram " + range_text(h) + " has a different scale (bytes per bin) than " +
           range_text(first_) + "; gprof refuses different scales");
    if (check_rate_ && h.rate_hz != first_.rate_hz)
      fail("histograms have different rates (" + std::to_string(first_.rate_hz) + " and " +
           std::to_string(h.rate_hz) + " Hz); gprof would use the first for all");
  }
  // A record for exactly the range of an earlier one is summed into it by
  // gprof; any other overlap is fatal ("overlapping histogram records").
  // The distinct ranges kept here are disjoint, so the neighbours of the
  // new low address are the only candidates for an overlap.
  auto next = ranges_.lower_bound(h.low_pc);
  if (next != ranges_.end() && next->first == h.low_pc && next->second == h.high_pc) return;
  if (next != ranges_.end() && next->first < h.high_pc)
    fail("overlapping histogram records " + range_text(h) + " and [" + hex(next->first) + ", " +
         hex(next->second) + ")");
  if (next != ranges_.begin()) {
    auto previous = std::prev(next);
    if (previous->second > h.low_pc)
      fail("overlapping histogram records [" + hex(previous->first) + ", " + hex(previous->second) +
           ") and " + range_text(h));
  }
  ranges_.emplace(h.low_pc, h.high_pc);
}

}  // namespace gmon
}  // namespace profiling::format
