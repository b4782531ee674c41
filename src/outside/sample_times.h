// Each sample's time as the process table keeps it for one image until the
// next take (issue 33): its time (CLOCK_MONOTONIC, the perf record's),
// leaf, periods, stack (an id in the image's table) and thread, 32 bytes a
// sample, given to the image's profile as its format::Timeline.
//
// NOT async-signal-safe, not thread-safe: the process table's (under the
// sampler's lock).
#ifndef PROFIL_OUTSIDE_SAMPLE_TIMES_H
#define PROFIL_OUTSIDE_SAMPLE_TIMES_H

#include <sys/types.h>

#include <cstdint>
#include <vector>

#include "format/profile.h"

namespace profiling::outside {

class SampleTimes {
 public:
  void add(uint64_t time, uint64_t leaf, uint64_t periods, uint32_t stack, pid_t tid);
  // The samples since the last take into *timeline, in time order (the
  // rings of several CPUs are read one after another), each time plus
  // realtime_offset_ns (Unix epoch ns), with a copy of stacks, the table
  // their ids name; then none are kept.
  void take_into(format::Timeline* timeline, const format::StackTable& stacks, int64_t realtime_offset_ns);

 private:
  struct Timed {
    uint64_t time, leaf;
    uint32_t periods, stack;
    pid_t tid;
  };
  std::vector<Timed> timed_;
};

}  // namespace profiling::outside

#endif  // PROFIL_OUTSIDE_SAMPLE_TIMES_H
