// The report's timeline (issue 33): a profile's samples with their times
// (format::Timeline), symbolized as the stacks are (stacks.h), per thread
// and in time order, on one time axis for every thread: what speedscope's
// file (speedscope.h) and the HTML page's flame charts
// (flame_chart_page.h) draw. Consecutive samples of one stack are one run;
// where a thread took no sample for longer than its samples stand for, a
// gap (kGap) keeps the axis in time.
//
// A profile without times (the inside's dumps, gmon.out, files before
// issue 33) gives each thread its stacks one after another, in the
// profile's order, and has_times false: the views say so.
//
// --focus, --ignore and --hide are not applied: a timeline shows what ran.
// Built once, by model.h, with the symbolizer the stacks use; read-only
// after.
#ifndef PROFIL_REPORT_TIMELINE_H
#define PROFIL_REPORT_TIMELINE_H

#include <cstdint>
#include <string>
#include <vector>

#include "format/profile.h"
#include "report/stacks.h"

namespace profiling::report {

// One stack of a thread, from start_ns for width_ns (offsets from
// Timeline::start_ns), or a gap.
struct TimelineRun {
  static constexpr uint32_t kGap = UINT32_MAX;
  uint64_t start_ns = 0;
  uint64_t width_ns = 0;  // its samples' weight times the period
  uint32_t stack = kGap;  // an index in Timeline::stacks.stacks()
  uint32_t samples = 0;   // samples taken in it (0 for a gap)
};

struct TimelineThread {
  int32_t pid = 0, tid = 0;  // tid 0: samples of no known thread
  std::string label;         // thread_label ("worker 4242"), or process_label when tid is 0
  std::vector<TimelineRun> runs;  // in time order, each starting where the one before ends
  uint64_t samples = 0;
};

struct Timeline {
  bool has_times = false;
  int64_t start_ns = 0;   // Unix epoch ns of offset 0: the profile's start, else its first sample
  uint64_t span_ns = 0;   // every thread's runs end by then
  uint64_t period_ns = 0; // what one weight stands for (1 when the profile does not say)
  std::string program;
  StackSet stacks;  // frames and stacks, root first (their counts: runs' samples)
  std::vector<TimelineThread> threads;  // by pid, then tid
};

// The timeline of profile; options as the report's stacks (StackOptions;
// roots are not added: each thread is a timeline of its own).
Timeline build_timeline(const format::Profile& profile, FrameSymbolizer& symbolizer, StackOptions options);

}  // namespace profiling::report

#endif  // PROFIL_REPORT_TIMELINE_H
