#include "report/export.h"

#include <algorithm>
#include <stdexcept>

#include "format/gmon.h"
#include "format/pprof.h"
#include "report/report.h"

namespace profiling::report {

std::string export_pprof(const format::Profile& profile, Symbolizer* symbolizer) {
  if (symbolizer == nullptr) return format::encode_pprof(profile);
  return format::encode_pprof(profile, [&](const format::Mapping& mapping, uint64_t address) {
    // Frames the profile carried go out as they came (encode_pprof writes
    // them when this gives none); passing them lets the warning say so.
    // Inlined functions become lines of the location, innermost first.
    return symbolizer->frames(&mapping, symbolizer->symbolize(&mapping, address, profile.frames_for(address)));
  });
}

std::optional<std::string> gmon_of_program(const format::Profile& profile, const format::Mapping& program,
                                           uint32_t rate_hz, Symbolizer& symbolizer, uint64_t* left_out,
                                           std::string* problem) {
  // gprof reads link-time addresses: the load bias is what the mapping adds
  // to them (runtime = link-time + bias). The histogram spans the object's
  // executable PT_LOAD segment.
  uint64_t link = 0;
  if (!symbolizer.file_address(program, program.start, &link)) {
    *problem = program.path + ": cannot read its program headers";
    return std::nullopt;
  }
  uint64_t bias = program.start - link;
  uint64_t text_low = UINT64_MAX, text_high = 0;
  for (const LoadSegment& segment : symbolizer.segments(program)) {
    if (!segment.executable) continue;
    text_low = std::min(text_low, segment.vaddr);
    text_high = std::max(text_high, segment.vaddr + segment.mem_size);
  }
  if (text_low >= text_high) {
    *problem = program.path + ": no executable segment";
    return std::nullopt;
  }
  format::GmonData data;
  data.histograms.push_back(format::histogram_from_samples(profile, bias, text_low, text_high, rate_hz));
  if (left_out) {
    *left_out = 0;
    for (const format::Sample& s : profile.samples)
      if (s.address - bias < text_low || s.address - bias >= text_high || !program.contains(s.address))
        *left_out += s.count;
  }
  return format::encode_gmon(data, format::GmonFlavor::gnu);
}

std::string export_gmon(const format::Profile& profile, Symbolizer& symbolizer, uint64_t* left_out) {
  const format::Mapping* program = nullptr;
  for (const format::Mapping& m : profile.mappings)
    if (!profile.program.empty() && m.path == profile.program) {
      program = &m;
      break;
    }
  if (!program && !profile.mappings.empty()) program = &profile.mappings.front();
  if (!program) throw std::runtime_error("the profile maps no executable");
  uint32_t rate = profile.period_ns ? static_cast<uint32_t>((1'000'000'000 + profile.period_ns / 2) / profile.period_ns) : 100;
  std::string problem;
  std::optional<std::string> bytes = gmon_of_program(profile, *program, rate, symbolizer, left_out, &problem);
  if (!bytes) throw std::runtime_error(problem);
  return std::move(*bytes);
}

}  // namespace profiling::report
