#include "report/input.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include "format/file_io.h"
#include "format/gmon.h"
#include "format/pprof.h"
#include "format/profraw.h"
#include "report/symbolizer.h"

namespace profiling::report {

const char* input_kind_name(InputKind kind) {
  switch (kind) {
    case InputKind::pprof: return "pprof";
    case InputKind::gmon: return "gmon";
    case InputKind::profraw: return "profraw";
  }
  return "?";
}

namespace {

std::string read_whole_file(const std::string& path) {
  std::string bytes, problem;
  if (!format::try_read_file(path, &bytes, &problem)) throw InputError(path, problem);
  return bytes;
}

bool starts_with(std::string_view bytes, std::string_view prefix) {
  return bytes.size() >= prefix.size() && bytes.substr(0, prefix.size()) == prefix;
}

// A BSD gmon.out has no magic: its header is (lpc, hpc, ncnt, version,
// profrate, spare[3]) with version GMONVERSION 0x00051879 (NetBSD
// sys/sys/gmon.h); an old 4.3BSD header is (lpc, hpc, ncnt) with ncnt the
// byte count of header plus bins. Either is recognised by its arithmetic.
bool looks_like_bsd_gmon(std::string_view bytes) {
  if (bytes.size() < 24) return false;
  uint64_t low, high;
  uint32_t count, version;
  std::memcpy(&low, bytes.data(), 8);
  std::memcpy(&high, bytes.data() + 8, 8);
  std::memcpy(&count, bytes.data() + 16, 4);
  std::memcpy(&version, bytes.data() + 20, 4);
  if (high <= low) return false;
  return version == 0x00051879 || (count >= 24 && count <= bytes.size());
}

}  // namespace

InputKind detect_input_kind(std::string_view bytes, const std::string& path) {
  if (bytes.empty()) throw InputError(path, "empty file, not a profile");
  if (bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
      static_cast<unsigned char>(bytes[1]) == 0x8b)
    return InputKind::pprof;
  if (starts_with(bytes, "gmon")) return InputKind::gmon;
  if (starts_with(bytes, std::string_view("PROFRAW\n", 8))) return InputKind::profraw;
  if (looks_like_bsd_gmon(bytes)) return InputKind::gmon;
  // An uncompressed profile.proto begins with field 1 (sample_type, a
  // length-delimited message): tag byte 0x0a.
  if (bytes[0] == 0x0a) return InputKind::pprof;
  throw InputError(path, "not a profile (neither pprof, gmon.out nor profraw)");
}

void anchor_link_time_mappings(format::Profile* profile) {
  Symbolizer reader;
  for (format::Mapping& mapping : profile->mappings) {
    for (const LoadSegment& segment : reader.segments(mapping)) {
      if (mapping.start >= segment.vaddr && mapping.start - segment.vaddr < segment.mem_size) {
        mapping.file_offset = mapping.start - segment.vaddr + segment.file_offset;
        if (mapping.build_id.empty()) mapping.build_id = read_build_id(mapping.path);
        break;
      }
    }
  }
}

LoadedProfile decode_profile(std::string_view bytes, const std::string& path, const std::string& exe) {
  LoadedProfile loaded;
  loaded.path = path;
  loaded.kind = detect_input_kind(bytes, path);
  try {
    switch (loaded.kind) {
      case InputKind::pprof:
        loaded.profile = format::decode_pprof(bytes);
        break;
      case InputKind::gmon: {
        std::string program = exe.empty() ? "a.out" : exe;
        loaded.profile = format::profile_from_gmon(format::decode_gmon(bytes), program);
        if (loaded.profile.program.empty()) loaded.profile.program = program;
        anchor_link_time_mappings(&loaded.profile);
        break;
      }
      case InputKind::profraw:
        loaded.profile = format::decode_profraw(bytes);
        break;
    }
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    // FormatError and the protobuf/zlib errors it wraps: truncated or corrupt.
    throw InputError(path, std::string("not a valid ") + input_kind_name(loaded.kind) +
                               " profile (truncated or corrupt): " + e.what());
  }
  return loaded;
}

LoadedProfile load_profile(const std::string& path, const std::string& exe) {
  return decode_profile(read_whole_file(path), path, exe);
}

namespace {

// inputs are read; when `owned` is inputs itself, each input's samples and
// frames are moved out rather than copied once they have been used.
format::Profile merge(const std::vector<LoadedProfile>& inputs, std::vector<LoadedProfile>* owned, bool* saturated) {
  format::Profile merged;
  if (saturated) *saturated = false;
  if (inputs.empty()) return merged;
  const LoadedProfile* period_source = nullptr;
  for (const LoadedProfile& input : inputs) {
    uint64_t period = input.profile.period_ns;
    if (period == 0) continue;
    if (!period_source) {
      period_source = &input;
    } else if (period != period_source->profile.period_ns) {
      throw InputError(input.path, "sampling period " + std::to_string(period) + " ns differs from " +
                                       period_source->path + "'s " +
                                       std::to_string(period_source->profile.period_ns) +
                                       " ns; profiles taken at different rates cannot be summed");
    }
  }
  merged.period_ns = period_source ? period_source->profile.period_ns : 0;
  merged.pid = inputs.size() == 1 ? inputs[0].profile.pid : 0;
  merged.clock = inputs[0].profile.clock;
  bool overflow = false;
  for (const LoadedProfile& input : inputs) {
    const format::Profile& p = input.profile;
    if (merged.program.empty()) merged.program = p.program;
    if (p.clock != merged.clock) merged.clock.clear();
    overflow |= format::saturating_add(merged.duration_ns, p.duration_ns);
    overflow |= format::saturating_add(merged.dropped, p.dropped);
    overflow |= format::saturating_add(merged.stacks_dropped, p.stacks_dropped);
    if (p.time_nanos != 0 && (merged.time_nanos == 0 || p.time_nanos < merged.time_nanos))
      merged.time_nanos = p.time_nanos;
  }

  // Objects are matched by build id (the same file loaded anywhere), else by
  // path; each (object, file offset) keeps the address range it had in the
  // first profile that mapped it, or moves above everything when another
  // object already occupies that range (ASLR puts objects anywhere).
  std::map<std::string, size_t> output_mapping;
  // Of several inputs, each sample keeps its process's pid (its own, else
  // its profile's), so a sum of several processes keeps each findable.
  const bool label_pids = inputs.size() > 1;
  auto overlaps_any = [&merged](uint64_t start, uint64_t limit) {
    for (const format::Mapping& m : merged.mappings)
      if (start < m.limit && m.start < limit) return true;
    return false;
  };
  for (size_t k = 0; k < inputs.size(); ++k) {
    const format::Profile& p = inputs[k].profile;
    std::vector<size_t> target(p.mappings.size());
    bool moved = false;  // some mapping of p lands at another address
    for (size_t i = 0; i < p.mappings.size(); ++i) {
      const format::Mapping& m = p.mappings[i];
      std::string key = (m.build_id.empty() ? "path:" + m.path : "id:" + m.build_id) + "@" +
                        std::to_string(m.file_offset);
      auto [it, inserted] = output_mapping.try_emplace(key, merged.mappings.size());
      if (inserted) {
        format::Mapping placed = m;
        if (overlaps_any(m.start, m.limit)) {
          uint64_t top = 0;
          for (const format::Mapping& other : merged.mappings) top = std::max(top, other.limit);
          placed.start = (top + 0xfffff) & ~uint64_t{0xfffff};
          placed.limit = placed.start + (m.limit - m.start);
        }
        merged.mappings.push_back(placed);
      } else {
        format::Mapping& placed = merged.mappings[it->second];
        uint64_t needed = placed.start + (m.limit - m.start);
        if (needed > placed.limit && !overlaps_any(placed.limit, needed)) placed.limit = needed;
        if (placed.build_id.empty()) placed.build_id = m.build_id;
      }
      target[i] = it->second;
      moved |= merged.mappings[it->second].start != m.start;
    }
    auto relocated = [&](uint64_t address) {
      if (!moved) return address;
      for (size_t i = 0; i < p.mappings.size(); ++i)
        if (p.mappings[i].contains(address)) return address - p.mappings[i].start + merged.mappings[target[i]].start;
      return address;
    };
    format::Profile* mine = owned ? &(*owned)[k].profile : nullptr;
    // Samples are collected first and summed per address and pid once, in
    // place (coalesce_samples): a map of every address cost ten times the
    // samples themselves.
    // Linux pids fit 32 bits (format::Sample::pid).
    const int32_t default_pid = label_pids ? static_cast<int32_t>(p.pid) : 0;
    if (mine && !moved && merged.samples.empty() && merged.stacks.empty()) {
      merged.samples = std::move(mine->samples);
      merged.stacks = std::move(mine->stacks);
      for (format::Sample& sample : merged.samples)
        if (sample.pid == 0) sample.pid = default_pid;
    } else {
      // Each of p's stacks is added to the merged table once, relocated;
      // identical stacks of several inputs become one, and their samples
      // are summed below.
      std::vector<uint32_t> stack_ids(p.stacks.size() + 1, UINT32_MAX);
      stack_ids[format::StackTable::kNoCallers] = format::StackTable::kNoCallers;
      std::vector<uint64_t> callers;
      merged.samples.reserve(merged.samples.size() + p.samples.size());
      for (const format::Sample& sample : p.samples) {
        uint32_t& stack = stack_ids[sample.stack < stack_ids.size() ? sample.stack : 0];
        if (stack == UINT32_MAX) {
          callers.clear();
          for (uint64_t caller : p.stacks.callers(sample.stack)) callers.push_back(relocated(caller));
          stack = merged.stacks.intern(callers, p.stacks.truncated(sample.stack));
        }
        merged.samples.push_back(
            {relocated(sample.address), sample.count, sample.pid ? sample.pid : default_pid, stack});
      }
    }
    if (mine) {
      std::vector<format::Sample>().swap(mine->samples);
      mine->stacks = format::StackTable();
    }
    // One object's names at one address are the same in every profile that
    // names them; the first profile's are kept.
    if (mine && !moved && merged.frames.empty()) {
      merged.frames = std::move(mine->frames);
    } else {
      for (const auto& [address, frames] : p.frames) merged.frames.try_emplace(relocated(address), frames);
    }
    if (mine) mine->frames.clear();
  }
  overflow |= format::coalesce_samples(&merged.samples);
  if (saturated) *saturated = overflow;
  // The main executable stays first (profile.h's convention).
  return merged;
}

}  // namespace

format::Profile merge_profiles(const std::vector<LoadedProfile>& inputs, bool* saturated) {
  return merge(inputs, nullptr, saturated);
}

format::Profile merge_profiles(std::vector<LoadedProfile>&& inputs, bool* saturated) {
  return merge(inputs, &inputs, saturated);
}

}  // namespace profiling::report
