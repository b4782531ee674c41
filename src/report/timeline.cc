#include "report/timeline.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <utility>

namespace profiling::report {
namespace {

// A sample to place: from the timeline, or (no times) a summed sample.
struct Entry {
  int64_t time = 0;
  uint64_t weight = 0;
  uint64_t address = 0;
  uint32_t stack = 0;
  int32_t pid = 0, tid = 0;
  size_t at = SIZE_MAX;  // its stack in the set
};

std::string name_of(const format::Profile& profile, int32_t id) {
  auto it = profile.thread_names.find(id);
  return it != profile.thread_names.end() ? it->second : std::string();
}

}  // namespace

Timeline build_timeline(const format::Profile& profile, FrameSymbolizer& symbolizer, StackOptions options) {
  options.roots = StackRoots::none;
  Timeline out;
  out.has_times = !profile.timeline.empty();
  out.period_ns = profile.period_ns != 0 ? profile.period_ns : 1;
  out.program = profile.program;
  std::vector<Entry> entries;
  if (out.has_times) {
    entries.reserve(profile.timeline.samples.size());
    for (const format::TimedSample& t : profile.timeline.samples)
      if (t.weight != 0) entries.push_back({t.time_ns, t.weight, t.address, t.stack, t.pid, t.tid});
  } else {
    for (const format::Sample& s : profile.samples)
      if (s.count != 0) entries.push_back({0, s.count, s.address, s.stack, s.pid, s.tid});
  }
  // Each sample's stack, symbolized by the stacks' builder in address
  // order (a leaf is named again only where the address changes), the
  // entries themselves staying in time order.
  StackBuilder builder(profile, symbolizer, options, out.has_times ? &profile.timeline.stacks : nullptr);
  std::vector<size_t> order(entries.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::pair(entries[a].address, entries[a].stack) < std::pair(entries[b].address, entries[b].stack);
  });
  for (size_t i : order) {
    const Entry& e = entries[i];
    entries[i].at = builder.add(format::Sample{e.address, e.weight, 0, e.stack, 0});
  }
  out.stacks = builder.take();

  // One axis for every thread: from the profile's start (or its first
  // sample's period, when earlier), each sample ending at its time.
  if (out.has_times) {
    const Entry& first = *std::min_element(entries.begin(), entries.end(),
                                           [](const Entry& a, const Entry& b) { return a.time < b.time; });
    out.start_ns = first.time - static_cast<int64_t>(first.weight * out.period_ns);
    if (profile.time_nanos != 0 && profile.time_nanos < out.start_ns) out.start_ns = profile.time_nanos;
    if (profile.time_nanos != 0 && profile.duration_ns != 0)
      out.span_ns = static_cast<uint64_t>(profile.time_nanos - out.start_ns) + profile.duration_ns;
  } else {
    out.start_ns = profile.time_nanos;
  }
  std::map<std::pair<int32_t, int32_t>, TimelineThread> threads;
  for (const Entry& e : entries) {
    if (e.at == SIZE_MAX) continue;
    const int32_t pid = e.pid != 0 ? e.pid : static_cast<int32_t>(profile.pid);
    auto [it, inserted] = threads.try_emplace({pid, e.tid});
    TimelineThread& thread = it->second;
    if (inserted) {
      thread.pid = pid;
      thread.tid = e.tid;
      if (e.tid != 0) {
        thread.label = thread_label(name_of(profile, e.tid), e.tid);
      } else {
        std::string name = name_of(profile, pid);
        if (name.empty()) name = profile.program.substr(profile.program.rfind('/') + 1);
        thread.label = process_label(name, pid);
      }
    }
    const uint64_t width = e.weight * out.period_ns;
    const uint64_t cursor = thread.runs.empty() ? 0 : thread.runs.back().start_ns + thread.runs.back().width_ns;
    uint64_t begin = cursor;
    if (out.has_times) {
      const int64_t end = e.time - out.start_ns;
      // A sample stands for the period before its time; a thread that ran
      // on shows samples a period apart, give or take the kernel's
      // timing: less than half a period off is no gap.
      if (end > static_cast<int64_t>(width) && static_cast<uint64_t>(end) - width > cursor + out.period_ns / 2)
        begin = static_cast<uint64_t>(end) - width;
    }
    if (begin > cursor) thread.runs.push_back({cursor, begin - cursor, TimelineRun::kGap, 0});
    TimelineRun* last = thread.runs.empty() ? nullptr : &thread.runs.back();
    if (last != nullptr && last->stack == e.at && begin == cursor) {
      last->width_ns += width;
      ++last->samples;
    } else {
      thread.runs.push_back({begin, width, static_cast<uint32_t>(e.at), 1});
    }
    ++thread.samples;
    out.span_ns = std::max(out.span_ns, begin + width);
  }
  for (auto& [key, thread] : threads) out.threads.push_back(std::move(thread));
  return out;
}

}  // namespace profiling::report
