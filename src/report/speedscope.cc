#include "report/speedscope.h"

#include <fmt/format.h>

#include "report/render.h"

namespace profiling::report {

std::string render_speedscope(const Timeline& timeline) {
  std::string out = R"({"$schema":"https://www.speedscope.app/file-format-schema.json","exporter":"profil",)";
  const std::string program = timeline.program.substr(timeline.program.rfind('/') + 1);
  out += R"("name":")" + json_escape(program.empty() ? "profile" : program) + R"(","activeProfileIndex":0,)";
  out += R"("shared":{"frames":[)";
  const std::vector<StackFrame>& frames = timeline.stacks.frames();
  for (size_t i = 0; i < frames.size(); ++i) {
    const StackFrame& f = frames[i];
    out += i ? ",{" : "{";
    out += R"("name":")" + json_escape(frame_label(f)) + '"';
    if (!f.file.empty()) out += R"(,"file":")" + json_escape(f.file) + '"';
    else if (!f.object.empty()) out += R"(,"file":")" + json_escape(f.object) + '"';
    if (f.line > 0) out += fmt::format(R"(,"line":{})", f.line);
    out += '}';
  }
  out += "]},\"profiles\":[";
  // A period in nanoseconds makes the weights time; else they are counts.
  const char* unit = timeline.period_ns > 1 ? "nanoseconds" : "none";
  const std::vector<Stack>& stacks = timeline.stacks.stacks();
  for (size_t t = 0; t < timeline.threads.size(); ++t) {
    const TimelineThread& thread = timeline.threads[t];
    std::string name = thread.label;
    if (!timeline.has_times) name += std::string(" (") + kNoTimes + ": stacks in no time order)";
    out += t ? ",{" : "{";
    out += fmt::format(R"("type":"sampled","name":"{}","unit":"{}","startValue":0,"endValue":{},"samples":[)",
                       json_escape(name), unit, timeline.span_ns);
    std::string weights;
    uint64_t end = 0;
    for (size_t r = 0; r < thread.runs.size(); ++r) {
      const TimelineRun& run = thread.runs[r];
      out += r ? ",[" : "[";
      if (run.stack != TimelineRun::kGap) {
        const std::vector<FrameId>& ids = stacks[run.stack].frames;
        for (size_t k = 0; k < ids.size(); ++k) out += (k ? "," : "") + std::to_string(ids[k]);
      }
      out += ']';
      weights += (r ? "," : "") + std::to_string(run.width_ns);
      end = run.start_ns + run.width_ns;
    }
    // To the common end, so that every thread's axis is the same.
    if (timeline.has_times && end < timeline.span_ns) {
      out += thread.runs.empty() ? "[]" : ",[]";
      weights += (thread.runs.empty() ? "" : ",") + std::to_string(timeline.span_ns - end);
    }
    out += "],\"weights\":[" + weights + "]}";
  }
  out += "]}\n";
  return out;
}

}  // namespace profiling::report
