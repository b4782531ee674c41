#include "outside/sample_times.h"

#include <algorithm>

namespace profiling::outside {

void SampleTimes::add(uint64_t time, uint64_t leaf, uint64_t periods, uint32_t stack, pid_t tid) {
  timed_.push_back({time, leaf, static_cast<uint32_t>(std::min<uint64_t>(periods, UINT32_MAX)), stack, tid});
}

void SampleTimes::take_into(format::Timeline* timeline, const format::StackTable& stacks,
                            int64_t realtime_offset_ns) {
  timeline->stacks = stacks;
  timeline->samples.reserve(timeline->samples.size() + timed_.size());
  for (const Timed& t : timed_)
    timeline->samples.push_back(
        {static_cast<int64_t>(t.time) + realtime_offset_ns, t.leaf, t.periods, t.stack, t.tid, 0});
  timeline->sort_by_time();
  std::vector<Timed>().swap(timed_);
}

}  // namespace profiling::outside
