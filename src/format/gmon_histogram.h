// What gmon.out's reader and writer (gmon_decode.cc, gmon_encode.cc) both
// check of a histogram: the rules gprof applies to a file's histogram
// records, and the text that names a histogram in an error. Throws
// FormatError; not part of gmon.h's interface.
#ifndef PROFIL_FORMAT_GMON_HISTOGRAM_H
#define PROFIL_FORMAT_GMON_HISTOGRAM_H

#include <cstdint>
#include <map>
#include <string>

#include "format/gmon.h"

namespace profiling::format::gmon {

// "0x1a2b".
std::string hex(uint64_t v);

// "[0x1000, 0x2000)": the histogram's range.
std::string range_text(const GmonHistogram& h);

// The rules gprof (hist.c: read_histogram_header, hist_read_rec) applies to
// a file's histogram records, checked one record at a time so a reader can
// stop at the first bad one. `check_rate`: gprof keeps the first record's rate
// and ignores the others'; a writer must not produce records that disagree.
class HistogramRules {
 public:
  explicit HistogramRules(bool check_rate) : check_rate_(check_rate) {}

  // Throws FormatError naming the first rule h breaks.
  void add(const GmonHistogram& h);

 private:
  bool check_rate_;
  bool have_first_ = false;
  GmonHistogram first_;  // without its bins
  double first_scale_ = 0;
  std::map<uint64_t, uint64_t> ranges_;
};

}  // namespace profiling::format::gmon

#endif  // PROFIL_FORMAT_GMON_HISTOGRAM_H
