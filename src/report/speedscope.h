// `profil report --format speedscope` (issue 33): speedscope's own file
// format (https://www.speedscope.app/file-format-schema.json), one
// "sampled" profile per thread, its stacks (root first) in time order with
// their weights in nanoseconds of the thread's time, so that speedscope's
// Time Order view shows what ran when. Every thread's profile spans the
// same axis (Timeline::span_ns): where a thread took no sample, an empty
// stack stands for the gap. A profile without times has its stacks in the
// profile's order and says so in each profile's name.
#ifndef PROFIL_REPORT_SPEEDSCOPE_H
#define PROFIL_REPORT_SPEEDSCOPE_H

#include <string>

#include "report/timeline.h"

namespace profiling::report {

// What a profile's name says when the file had no times.
inline constexpr const char* kNoTimes = "no times in this profile";

std::string render_speedscope(const Timeline& timeline);

}  // namespace profiling::report

#endif  // PROFIL_REPORT_SPEEDSCOPE_H
