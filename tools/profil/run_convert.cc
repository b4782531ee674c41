// The sinks every process's profile goes through (run_convert.h), whichever
// source made it: one place decides which file holds which samples.
#include "run_convert.h"

#include <unistd.h>

#include <algorithm>
#include <optional>
#include <set>
#include <stdexcept>

#include "batch_heap.h"
#include "errno_text.h"
#include "format/file_io.h"
#include "report/export.h"
#include "report/input.h"
#include "report/jit_map.h"
#include "report/own_samples.h"
#include "report/symbolizer.h"
#include "report/vdso_names.h"

namespace profiling::cli {
namespace {

namespace fs = std::filesystem;

// A file of the run that could not be written, with its errno (a loss
// that says "disk full" needs ENOSPC, not a text).
struct WriteRefused : std::runtime_error {
  WriteRefused(const std::string& why, int error) : std::runtime_error(why), error(error) {}
  int error;
};

// Written to a temporary name and renamed (format/file_io.h): a failed
// write leaves no half file, and throws WriteRefused.
void write_output(const fs::path& path, std::string_view bytes) {
  std::string problem;
  int error = 0;
  if (!format::try_write_file_atomically(path.string(), bytes, &problem, &error))
    throw WriteRefused("could not be written: " + write_refusal(error, path.parent_path().string()), error);
}

int refused_error(const std::exception& e) {
  const auto* refused = dynamic_cast<const WriteRefused*>(&e);
  return refused ? refused->error : 0;
}

class Converter {
 public:
  // The files carry function names, and the lines and inline frames of
  // every DWARF the symbolizer finds: the objects' own and distribution
  // debug files' (libc6-dbg, -dbgsym), so that every reader of the file,
  // go tool pprof as profil report, sees the same frames (issue 35; issue
  // 23 had left the debug files to the report: inflating libc's was half
  // of the run's symbolizing, now read from the uncompressed copy
  // debug_file_cache.h keeps, docs/report.md "Symbolization").
  explicit Converter(bool symbolize) : symbolize_(symbolize) {}

  // Each file mapping gets its object's build id (NT_GNU_BUILD_ID), read
  // once per path.
  void add_build_ids(format::Profile* profile) {
    for (format::Mapping& mapping : profile->mappings) {
      if (mapping.path.empty() || mapping.path[0] != '/') continue;
      auto [it, inserted] = build_ids_.try_emplace(mapping.path);
      if (inserted) it->second = report::read_build_id(mapping.path);
      mapping.build_id = it->second;
    }
  }

  void write_pprof(const fs::path& path, const format::Profile& profile) {
    write_output(path, report::export_pprof(profile, symbolize_ ? &symbolizer_ : nullptr));
  }

  // gmon.out for gprof, of a profile whose program is mapped first (its
  // dump's maps put it there). false when there is none, or it cannot be
  // read.
  bool write_gmon(const fs::path& path, const format::Profile& profile, uint32_t hz) {
    if (profile.mappings.empty() || profile.mappings.front().path != profile.program) return false;
    std::string problem;
    const std::optional<std::string> bytes =
        report::gmon_of_program(profile, profile.mappings.front(), hz, symbolizer_, nullptr, &problem);
    if (!bytes) return false;
    write_output(path, *bytes);
    return true;
  }

  std::vector<std::string> warnings() { return symbolizer_.take_warnings(); }

 private:
  bool symbolize_;
  report::Symbolizer symbolizer_;
  std::map<std::string, std::string> build_ids_;
};

// "<progname> (pid N)", progname as in the file names (argv[0]'s, which
// for a link like sh -> dash is the name the program was called by).
ProcessSummary summarize(const std::string& stem, const format::ProfrawData& data) {
  ProcessSummary p;
  p.pid = data.profile.pid;
  const std::string pid = "." + std::to_string(data.profile.pid);
  size_t at = stem.rfind(pid);
  std::string name = at != std::string::npos && at > 0 ? stem.substr(0, at)
                                                       : fs::path(data.profile.program).filename().string();
  p.label = name + " (pid " + std::to_string(data.profile.pid) + ")";
  p.image_stem = stem;
  if (const size_t snapshot = stem.rfind(".s");
      at != std::string::npos && snapshot != std::string::npos && snapshot >= at + pid.size() && snapshot + 2 < stem.size() &&
      stem.find_first_not_of("0123456789", snapshot + 2) == std::string::npos)
    p.image_stem = stem.substr(0, snapshot);
  p.samples = data.profile.total_count();
  p.period_ns = data.profile.period_ns;
  p.clock = data.profile.clock;
  p.event = data.profile.event;
  p.event_period = data.profile.event_period;
  p.hz = data.hz;
  p.dropped = data.profile.dropped;
  p.end_reason = data.end_reason;
  p.signal = data.signal;
  p.unsampled = data.unsampled;
  p.start_clock = data.start_clock;
  p.interpreter_frames = data.interpreter_frames;
  p.own_samples = data.profile.own_samples;
  // Profil's own samples are already set apart (ProfileSinks::add).
  for (const format::Sample& sample : data.profile.samples) {
    if (sample.stack == format::StackTable::kNoCallers) continue;
    p.with_stacks += sample.count;
    if (data.profile.stacks.truncated(sample.stack)) p.cut_stacks += sample.count;
  }
  return p;
}

// A profile kept for the shared file until every profile is in.
struct Small {
  size_t index;  // in Conversion::processes
  std::string raw_path, stem;
  format::Profile profile;
};

}  // namespace

struct ProfileSinks::State {
  explicit State(ConvertOptions o) : options(std::move(o)), converter(options.symbolize) {}

  ConvertOptions options;
  Converter converter;
  Conversion c;
  std::vector<Small> small;
  size_t warnings_taken = 0;  // the converter's warnings returned by an earlier finish()
  // The run's unsampled time is counted in whole periods over its
  // processes, not rounded in each (format/profraw.h).
  format::UnsampledCarry unsampled_carry;

  // A profile whose files could not be written: said of its dump, which
  // is kept, or of the file a profile made in memory was to be.
  void lose_files(const std::string& raw_path, const std::string& stem, const std::exception& e) {
    const std::string why = e.what();
    const int error = refused_error(e);
    if (raw_path.empty())
      c.losses.push_back({(options.dir / (stem + ".pb.gz")).string(), why, error});
    else
      c.losses.push_back({raw_path, why + "; the dump is kept", error});
  }

  // A JIT's perf-PID.map copied into the output directory (a report read
  // later names the code from it, jit_map.h), and its names given to the
  // profile when the run symbolizes. Here because every source's profiles
  // come here when their process ended (or a snapshot was cut: the map so
  // far, replaced at the next).
  // Code whose memory the JIT reused during the run is named by all it
  // held ("a | b"): the samples carry no times to choose (jit_map.h), and
  // the run says how many such addresses were sampled.
  void keep_jit_code(format::Profile* profile) {
    std::string problem;
    if (!report::keep_jit_map(*profile, options.dir.string(), &problem)) c.warnings.push_back(problem);
    size_t ambiguous = 0;
    if (options.symbolize) report::name_jit_code(profile, {options.dir.string()}, &ambiguous);
    if (ambiguous > 0)
      c.warnings.push_back(fs::path(profile->program).filename().string() + " (pid " + std::to_string(profile->pid) +
                           "): " + std::to_string(ambiguous) +
                           " sampled addresses of JIT code held several functions during the run (the JIT reused "
                           "their memory): each is named by all of them, 'a | b'");
  }

  // The vDSO's functions, named now from profil's own (the same kernel's):
  // no report can read that object later (report/vdso_names.h, issue 35).
  void name_vdso_code(format::Profile* profile) {
    if (options.symbolize) report::name_vdso_code(profile);
  }

  // <stem>.pb.gz (and gmon.<stem>.out when asked) for one process, beside
  // its dump; the dump removed.
  void write_own(ProcessSummary& p, const std::string& raw_path, const std::string& stem,
                 const format::Profile& profile) {
    const fs::path dir = raw_path.empty() ? options.dir : fs::path(raw_path).parent_path();
    const fs::path pprof_path = dir / (stem + ".pb.gz");
    converter.write_pprof(pprof_path, profile);
    p.files.push_back(pprof_path.string());
    c.files.push_back(pprof_path.string());
    const fs::path gmon_path = dir / ("gmon." + stem + ".out");
    if (options.gmon && converter.write_gmon(gmon_path, profile, p.hz)) {
      p.files.push_back(gmon_path.string());
      c.files.push_back(gmon_path.string());
    }
    if (!raw_path.empty()) fs::remove(raw_path);
  }
};

ProfileSinks::ProfileSinks(ConvertOptions options) : state_(std::make_unique<State>(std::move(options))) {
  // Converting is the report's kind of work (decode, symbolize, write), and
  // by now the program has been started: its heap is its own.
  use_batch_heap();
}

ProfileSinks::~ProfileSinks() = default;

void ProfileSinks::lose(const std::string& what, const std::string& why) { state_->c.losses.push_back({what, why}); }

void ProfileSinks::add(ProcessProfile profile) {
  State& s = *state_;
  format::ProfrawData& data = profile.data;
  // Samples in libprofil (the handler on its own stack, the dump at exit,
  // the inside ring's drain) are profil's cost, not the program's: left out
  // of the file, their count carried beside (issue 22). Here, not in the
  // report: every consumer of the file, go tool pprof included, then sees
  // the program's samples only.
  report::set_apart_own_samples(&data.profile);
  s.c.processes.push_back(summarize(profile.stem, data));
  const size_t index = s.c.processes.size() - 1;
  ProcessSummary& p = s.c.processes.back();
  s.c.dumped[p.pid] = s.c.dumped[p.pid] || data.end_reason != format::profraw::EndReason::exec;
  s.c.images.insert({data.profile.pid, data.profile.time_nanos});
  try {
    if (p.empty() && profile.empty_window) {
      s.write_own(p, profile.raw_path, profile.stem, data.profile);
      return;
    }
    if (p.empty()) {
      // A process that never ran a sampling period (a shell that exec'd
      // at once): nothing to show.
      if (!profile.raw_path.empty()) fs::remove(profile.raw_path);
      return;
    }
    format::add_unsampled_rows(data, &data.profile, &s.unsampled_carry);
    p.unsampled_counts = data.profile.total_count() - p.samples;
    s.converter.add_build_ids(&data.profile);
    s.keep_jit_code(&data.profile);
    s.name_vdso_code(&data.profile);
    if (s.options.share && p.cpu_ns() < kOwnFileCpuNs)
      s.small.push_back({index, profile.raw_path, profile.stem, std::move(data.profile)});
    else
      s.write_own(p, profile.raw_path, profile.stem, data.profile);
  } catch (const std::exception& e) {
    s.lose_files(profile.raw_path, profile.stem, e);
  }
}

Conversion ProfileSinks::finish() {
  State& s = *state_;
  // The small processes share one file when there are several (of one
  // sampling period: only those can be summed).
  std::vector<report::LoadedProfile> shared;
  std::vector<const Small*> shared_small;
  for (const Small& small : s.small) {
    ProcessSummary& p = s.c.processes[small.index];
    if (s.small.size() > 1 && small.profile.period_ns == s.small.front().profile.period_ns) {
      shared.push_back({small.raw_path.empty() ? small.stem : small.raw_path, report::InputKind::profraw,
                        small.profile});
      shared_small.push_back(&small);
      continue;
    }
    try {
      s.write_own(p, small.raw_path, small.stem, small.profile);
    } catch (const std::exception& e) {
      s.lose_files(small.raw_path, small.stem, e);
    }
  }
  if (!shared.empty()) {
    const fs::path path = s.options.dir / ("small." + std::to_string(::getpid()) + ".pb.gz");
    try {
      format::Profile merged = report::merge_profiles(shared);
      merged.program.clear();  // several programs
      s.converter.write_pprof(path, merged);
      s.c.files.push_back(path.string());
      s.c.shared_file = path.string();
      s.c.shared_processes = shared.size();
      for (const Small* small : shared_small) {
        s.c.processes[small->index].files.push_back(path.string());
        if (!small->raw_path.empty()) fs::remove(small->raw_path);
      }
    } catch (const std::exception& e) {
      const bool from_dumps = std::none_of(shared_small.begin(), shared_small.end(),
                                           [](const Small* small) { return small->raw_path.empty(); });
      s.c.losses.push_back({path.string(), std::string(e.what()) + (from_dumps ? "; the dumps of " +
                                                                          std::to_string(shared.size()) +
                                                                          " processes are kept"
                                                                    : ""),
                          refused_error(e)});
    }
  }
  s.small.clear();
  const std::vector<std::string>& warnings = s.converter.warnings();
  s.c.warnings.insert(s.c.warnings.end(), warnings.begin() + static_cast<long>(std::min(s.warnings_taken, warnings.size())),
                      warnings.end());
  s.warnings_taken = warnings.size();
  Conversion out = std::move(s.c);
  s.c = Conversion();
  return out;
}

void ProfileSinks::renew_symbolizer() {
  auto renewed = std::make_unique<State>(state_->options);
  renewed->unsampled_carry = state_->unsampled_carry;
  state_ = std::move(renewed);
}

Conversion convert_profiles(std::vector<ProcessProfile> profiles, const ConvertOptions& options) {
  ProfileSinks sinks(options);
  for (ProcessProfile& profile : profiles) sinks.add(std::move(profile));
  return sinks.finish();
}

}  // namespace profiling::cli
