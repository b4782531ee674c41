#include "report/export.h"

#include <algorithm>
#include <map>
#include <span>
#include <stdexcept>
#include <unordered_map>
#include <utility>
#include <vector>

#include "format/gmon.h"
#include "format/pprof.h"
#include "report/frame_names.h"
#include "report/report.h"

namespace profiling::report {

std::string export_pprof(const format::Profile& profile, Symbolizer* symbolizer) {
  if (symbolizer == nullptr) return format::encode_pprof(profile);
  return format::encode_pprof(profile, [&](const format::Mapping& mapping, uint64_t address) {
    // Frames the profile carried go out as they came (encode_pprof writes
    // them when this gives none); passing them lets the warning say so.
    // Inlined functions become lines of the location, innermost first.
    // Each name as the views print it, without its symbol version
    // ("__libc_start_main@@GLIBC_2.34": the version says which ABI, not
    // what ran); the linker's name, version and all, stays the system name
    // (issue 35: go tool pprof -top and profil report agree row for row).
    const Symbol symbol = symbolizer->symbolize(&mapping, address, profile.frames_for(address));
    std::vector<format::Frame> frames = symbolizer->frames(&mapping, symbol);
    for (format::Frame& frame : frames) frame.function = drop_symbol_version(frame.function);
    // Code of a readable object no symbol table names has the row the
    // views give it ("libc.so.6+0x5c3f0", unnamed_code.h), not pprof's
    // "[libc.so.6]".
    if (frames.empty() && !symbol.from_profile && symbol.function != kUnknownFunction)
      frames.push_back(format::Frame{symbol.function, symbol.function, "", 0});
    return frames;
  }, [&](const format::Mapping& mapping) { return symbolizer->inline_frames_read(mapping); });
}

std::vector<format::GmonArc> gmon_arcs_from_stacks(const format::Profile& profile, const format::Mapping& program,
                                                  uint64_t bias, uint64_t text_low, uint64_t text_high,
                                                  Symbolizer& symbolizer) {
  auto in_text = [&](uint64_t address) {
    return program.contains(address) && address - bias >= text_low && address - bias < text_high;
  };
  // Runtime address -> link-time entry of the ELF function holding it (0:
  // none). gprof names an arc's ends by its symbol table alone (binutils
  // gprof/call_graph.c cg_tally: sym_lookup of from_pc and of self_pc), so
  // inlined frames are their outer function here.
  std::unordered_map<uint64_t, uint64_t> entry_of;
  auto entry = [&](uint64_t address) {
    auto [it, inserted] = entry_of.try_emplace(address, 0);
    if (inserted) {
      const Symbol symbol = symbolizer.symbolize(&program, address);
      if (symbol.known && !symbol.from_profile) it->second = symbol.function_address;
    }
    return it->second;
  };
  std::map<std::pair<uint64_t, uint64_t>, uint64_t> counts;  // (from_pc, self_pc) -> samples
  std::vector<std::pair<uint64_t, uint64_t>> seen;            // (caller, callee) entries of this stack
  for (const format::Sample& sample : profile.samples) {
    // Only the samples gprof's histogram holds, so that the time gprof
    // propagates along an arc is the arc's count of samples (see below).
    if (sample.stack == format::StackTable::kNoCallers || !in_text(sample.address)) continue;
    const std::span<const uint64_t> callers = profile.stacks.callers(sample.stack);
    seen.clear();
    uint64_t callee = sample.address;
    for (uint64_t caller : callers) {
      // Both ends in the program: an edge through a library (do_sort ->
      // qsort -> cmp) is no arc, and gprof could not name its library end.
      if (in_text(callee) && in_text(caller)) {
        const uint64_t self_pc = entry(callee), caller_entry = entry(caller);
        // An edge counts once per sample however often the stack recurses
        // through it: the samples through the edge, as cumulative counts are.
        if (self_pc && caller_entry &&
            std::find(seen.begin(), seen.end(), std::pair{caller_entry, self_pc}) == seen.end()) {
          seen.emplace_back(caller_entry, self_pc);
          // The caller's address is inside its call instruction (return
          // address - 1, format::StackTable), so a call that ends its
          // function (a noreturn call) still names the caller.
          format::saturating_add(counts[{caller - bias, self_pc}], sample.count);
        }
      }
      callee = caller;
    }
  }
  std::vector<format::GmonArc> arcs;
  arcs.reserve(counts.size());
  for (const auto& [pcs, count] : counts) arcs.push_back({.from_pc = pcs.first, .self_pc = pcs.second, .count = count});
  return arcs;
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
  data.arcs = gmon_arcs_from_stacks(profile, program, bias, text_low, text_high, symbolizer);
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
