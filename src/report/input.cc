#include "report/input.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "format/file_io.h"
#include "format/gmon.h"
#include "format/pprof.h"
#include "format/profraw.h"
#include "report/jit_map.h"
#include "report/merge.h"
#include "report/own_samples.h"
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
        // As `profil run` converts a dump (tools/profil/run_convert.cc).
        set_apart_own_samples(&loaded.profile);
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
  LoadedProfile loaded = decode_profile(read_whole_file(path), path, exe);
  // JIT code: named from the perf-PID.map profil run kept beside the
  // profile, else the JIT's own in /tmp (jit_map.h).
  const size_t slash = path.rfind('/');
  name_jit_code(&loaded.profile, {slash == std::string::npos ? "." : path.substr(0, slash), "/tmp"});
  return loaded;
}

format::Profile merge_profiles(const std::vector<LoadedProfile>& inputs, bool* saturated) {
  // One copy at a time: the sum and one input are held, never all inputs twice.
  ProfileMerger merger;
  for (const LoadedProfile& input : inputs) merger.add(LoadedProfile(input));
  return merger.finish(saturated);
}

format::Profile merge_profiles(std::vector<LoadedProfile>&& inputs, bool* saturated) {
  ProfileMerger merger;
  for (LoadedProfile& input : inputs) merger.add(std::move(input));
  return merger.finish(saturated);
}

}  // namespace profiling::report
