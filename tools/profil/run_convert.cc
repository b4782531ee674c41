#include "run_convert.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "command.h"
#include "common.h"
#include "format/file_io.h"
#include "format/format_error.h"
#include "format/gmon.h"
#include "format/pprof.h"
#include "report/input.h"
#include "report/symbolizer.h"
#include "run_dumps.h"

namespace profiling::cli {
namespace {

namespace fs = std::filesystem;

class Converter {
 public:
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
    format::PprofSymbolizer symbolizer;
    if (symbolize_) {
      // Inlined functions as lines of the location, innermost first.
      symbolizer = [this](const format::Mapping& mapping, uint64_t address) {
        return symbolizer_.frames(&mapping, symbolizer_.symbolize(&mapping, address));
      };
    }
    format::write_file_atomically(path.string(), format::encode_pprof(profile, symbolizer));
  }

  // gmon.out for gprof: one histogram over the main executable's code, in
  // the link-time addresses gprof matches against the symbol table (the
  // load bias subtracted). false when the executable cannot be read.
  bool write_gmon(const fs::path& path, const format::Profile& profile, uint32_t hz) {
    if (profile.mappings.empty() || profile.mappings.front().path != profile.program) return false;
    const format::Mapping& main = profile.mappings.front();
    uint64_t low = UINT64_MAX, high = 0, bias = 0;
    bool have_bias = false;
    for (const report::LoadSegment& segment : symbolizer_.segments(main)) {
      if (!segment.executable) continue;
      low = std::min(low, segment.vaddr);
      high = std::max(high, segment.vaddr + segment.mem_size);
      if (main.file_offset >= segment.file_offset &&
          main.file_offset < segment.file_offset + std::max(segment.file_size, uint64_t{1})) {
        // elf(5): the segment's byte at file offset o is at vaddr + (o - p_offset).
        bias = main.start - (segment.vaddr + (main.file_offset - segment.file_offset));
        have_bias = true;
      }
    }
    if (!have_bias || low >= high) return false;
    format::GmonData data;
    data.histograms.push_back(format::histogram_from_samples(profile, bias, low, high, hz));
    format::write_file_atomically(path.string(), format::encode_gmon(data));
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
ProcessSummary summarize(const fs::path& raw, const format::ProfrawData& data) {
  ProcessSummary p;
  p.pid = data.profile.pid;
  const std::string stem = raw.stem().string();
  const std::string pid = "." + std::to_string(data.profile.pid);
  size_t at = stem.rfind(pid);
  std::string name = at != std::string::npos && at > 0 ? stem.substr(0, at)
                                                       : fs::path(data.profile.program).filename().string();
  p.label = name + " (pid " + std::to_string(data.profile.pid) + ")";
  p.samples = data.profile.total_count();
  p.period_ns = data.profile.period_ns;
  p.clock = data.profile.clock;
  p.hz = data.hz;
  p.dropped = data.profile.dropped;
  p.end_reason = data.end_reason;
  p.signal = data.signal;
  p.unsampled = data.unsampled;
  p.start_clock = data.start_clock;
  // Samples taken in libprofil's own code (its handler on its own stack,
  // the dump) are profil's, not the program's stacks: left out.
  auto in_profil = [&data](uint64_t address) {
    const format::Mapping* mapping = data.profile.mapping_for(address);
    return mapping != nullptr && fs::path(mapping->path).filename().string().starts_with("libprofil.so");
  };
  for (const format::Sample& sample : data.profile.samples) {
    if (sample.stack == format::StackTable::kNoCallers) continue;
    bool ours = in_profil(sample.address);
    for (const uint64_t frame : data.profile.stacks.callers(sample.stack)) ours = ours || in_profil(frame);
    if (ours) continue;
    p.with_stacks += sample.count;
    if (data.profile.stacks.truncated(sample.stack)) p.cut_stacks += sample.count;
  }
  return p;
}

}  // namespace

void lose(Conversion* c, const std::string& what, const std::string& why) {
  fail(what, why);
  c->losses.push_back(what);
}

Conversion convert_dumps(const std::vector<fs::path>& dumps, const std::string& run_id, const ConvertOptions& options,
                         const fs::path& dir, bool share,
                         const std::vector<format::profraw::LedgerRecord>& records) {
  Converter converter(options.symbolize);
  Conversion c;
  struct Pending {
    size_t index;  // in c.processes
    fs::path raw;
    format::Profile profile;
  };
  std::vector<Pending> small;

  // <stem>.pb.gz (and gmon.<stem>.out when asked) for one process.
  auto write_own = [&](ProcessSummary& p, const fs::path& raw, const format::Profile& profile) {
    const std::string stem = dump_stem(raw.filename().string());
    const fs::path pprof_path = raw.parent_path() / (stem + ".pb.gz");
    converter.write_pprof(pprof_path, profile);
    p.files.push_back(pprof_path.string());
    c.files.push_back(pprof_path.string());
    const fs::path gmon_path = raw.parent_path() / ("gmon." + stem + ".out");
    if (options.gmon && converter.write_gmon(gmon_path, profile, p.hz)) {
      p.files.push_back(gmon_path.string());
      c.files.push_back(gmon_path.string());
    }
    fs::remove(raw);
  };

  for (const fs::path& raw : dumps) {
    try {
      std::string bytes, problem;  // the problem without the path: fail() below names it
      // A run's own dumps are opened without following a link (--convert
      // reads what the user names).
      if (!format::try_read_file(raw.string(), &bytes, &problem, format::kMaxInputSize, run_id.empty()))
        throw format::FormatError(problem);
      if (!run_id.empty()) {
        // Only this run's dumps; another run's (or a foreign file) stay.
        format::profraw::Header header;
        try {
          header = format::read_profraw_header(bytes);
        } catch (const format::FormatError&) {
          continue;
        }
        if (std::string(header.run_id, strnlen(header.run_id, sizeof header.run_id)) != run_id) continue;
      }
      format::ProfrawData data = format::read_profraw(bytes);
      c.processes.push_back(summarize(raw, data));
      ProcessSummary& p = c.processes.back();
      c.dumped[p.pid] = c.dumped[p.pid] || data.end_reason != format::profraw::EndReason::exec;
      c.images.insert({data.profile.pid, data.profile.time_nanos});
      if (p.empty()) {
        // A process that never ran a sampling period (a shell that exec'd
        // at once): nothing to show.
        fs::remove(raw);
        continue;
      }
      format::add_unsampled_rows(data, &data.profile);
      p.unsampled_counts = data.profile.total_count() - p.samples;
      converter.add_build_ids(&data.profile);
      if (share && p.cpu_ns() < kOwnFileCpuNs)
        small.push_back({c.processes.size() - 1, raw, std::move(data.profile)});
      else
        write_own(p, raw, data.profile);
    } catch (const std::exception& e) {
      lose(&c, raw.string(), std::string(e.what()) + "; the dump is kept");
    }
  }

  // The images that ended without a sample: the last end record of each
  // (an image whose exec failed recorded its end again later).
  std::map<std::pair<int64_t, int64_t>, const format::profraw::LedgerRecord*> ended;
  for (const format::profraw::LedgerRecord& record : records)
    if (record.kind == static_cast<uint32_t>(format::profraw::LedgerKind::end))
      ended[{record.pid, record.start_ns}] = &record;
  for (const auto& [image, record] : ended) {
    if (!c.images.insert(image).second) continue;  // it has a dump after all
    ProcessSummary p;
    p.pid = record->pid;
    p.label = program_of(*record) + " (pid " + std::to_string(record->pid) + ")";
    p.hz = record->hz;
    p.period_ns = record->hz ? 1'000'000'000ull / record->hz : 0;
    p.clock = format::describe_clock(record->clock);
    p.start_clock = format::describe_clock(record->start_clock);
    p.end_reason = static_cast<format::profraw::EndReason>(record->end_reason);
    p.signal = record->signal;
    c.dumped[p.pid] = c.dumped[p.pid] || p.end_reason != format::profraw::EndReason::exec;
    c.processes.push_back(std::move(p));
  }

  // The small processes share one file when there are several (of one
  // sampling period: only those can be summed).
  std::vector<report::LoadedProfile> shared;
  std::vector<const Pending*> shared_pending;
  for (const Pending& pending : small) {
    ProcessSummary& p = c.processes[pending.index];
    if (small.size() > 1 && pending.profile.period_ns == small.front().profile.period_ns) {
      shared.push_back({pending.raw.string(), report::InputKind::profraw, pending.profile});
      shared_pending.push_back(&pending);
      continue;
    }
    try {
      write_own(p, pending.raw, pending.profile);
    } catch (const std::exception& e) {
      lose(&c, pending.raw.string(), std::string(e.what()) + "; the dump is kept");
    }
  }
  if (!shared.empty()) {
    const fs::path path = dir / ("small." + std::to_string(::getpid()) + ".pb.gz");
    try {
      format::Profile merged = report::merge_profiles(shared);
      merged.program.clear();  // several programs
      converter.write_pprof(path, merged);
      c.files.push_back(path.string());
      c.shared_file = path.string();
      c.shared_processes = shared.size();
      for (const Pending* pending : shared_pending) {
        c.processes[pending->index].files.push_back(path.string());
        fs::remove(pending->raw);
      }
    } catch (const std::exception& e) {
      lose(&c, path.string(), std::string(e.what()) + "; the dumps of " + std::to_string(shared.size()) +
                                  " processes are kept");
    }
  }
  print_warnings(converter.warnings());
  return c;
}

}  // namespace profiling::cli
