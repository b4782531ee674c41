// The inside source's side of the run directory (run_dumps.h): what the
// preload runtime left there, trusted only by name and run id.
#include "run_dumps.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <set>
#include <utility>

#include "format/file_io.h"
#include "format/format_error.h"
#include "format/run_names.h"

namespace profiling::cli {

namespace fs = std::filesystem;

namespace {

// What the profiles of a dump are named: "<prog>.<pid>[.<n>]", the token
// dropped (format::DumpName::stem); a name the runtime did not write (a
// file given to --convert) keeps what precedes its last ".profraw".
std::string profile_stem(const std::string& filename, int64_t pid) {
  if (const std::optional<format::DumpName> name = format::parse_dump_name(filename, pid)) return name->stem();
  return filename.substr(0, filename.rfind(".profraw"));
}

}  // namespace

std::string run_token(const std::string& run_id) {
  const char* token = format::run_token(run_id.c_str());
  return token != nullptr ? token : "";
}

std::string program_of(const format::profraw::LedgerRecord& record) {
  return record.name[0] != '\0' ? record.name : "program";
}

fs::path ledger_path(const fs::path& dir, const std::string& token) {
  char name[format::kLedgerNameSize];
  format::format_ledger_name(name, sizeof name, token.c_str());
  return dir / name;
}

void create_ledger(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd >= 0) ::close(fd);
}

RunFiles list_run_files(const fs::path& dir, const std::string& token) {
  RunFiles files;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    const std::optional<format::DumpName> name = format::parse_dump_name(entry.path().filename().string());
    if (!name || name->token != token || entry.symlink_status(ec).type() != fs::file_type::regular) continue;
    if (!name->temporary()) {
      files.dumps.push_back(entry.path());
      continue;
    }
    // "<name>.tmp.<pid>", empty: a placeholder.
    if (entry.file_size(ec) == 0 && !ec) files.placeholders[name->writer].push_back(entry.path());
  }
  std::sort(files.dumps.begin(), files.dumps.end());
  files.ledger = ledger_path(dir, token);
  std::string bytes, problem;
  if (format::try_read_file(files.ledger.string(), &bytes, &problem, format::kMaxInputSize, /*follow=*/false))
    files.records = format::read_ledger(bytes);
  return files;
}

Conversion convert_dumps(const std::vector<fs::path>& dumps, const std::string& run_id, const ConvertOptions& options,
                         const std::vector<format::profraw::LedgerRecord>& records) {
  ProfileSinks sinks(options);
  std::set<std::pair<int64_t, int64_t>> images;  // (pid, start_ns) of each dump read
  for (const fs::path& raw : dumps) {
    ProcessProfile profile;
    try {
      std::string bytes, problem;  // the problem without the path: the loss names it
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
      profile.data = format::read_profraw(bytes);
    } catch (const std::exception& e) {
      sinks.lose(raw.string(), std::string(e.what()) + "; the dump is kept");
      continue;
    }
    images.insert({profile.data.profile.pid, profile.data.profile.time_nanos});
    profile.stem = profile_stem(raw.filename().string(), profile.data.profile.pid);
    profile.raw_path = raw.string();
    if (options.reshape) options.reshape(profile);
    sinks.add(std::move(profile));
  }

  // The images that ended without a sample: the last end record of each
  // (an image whose exec failed recorded its end again later), unless it
  // has a dump after all.
  std::map<std::pair<int64_t, int64_t>, const format::profraw::LedgerRecord*> ended;
  for (const format::profraw::LedgerRecord& record : records)
    if (record.kind == static_cast<uint32_t>(format::profraw::LedgerKind::end))
      ended[{record.pid, record.start_ns}] = &record;
  for (const auto& [image, record] : ended) {
    if (images.count(image)) continue;
    ProcessProfile profile;
    format::ProfrawData& data = profile.data;
    data.profile.pid = record->pid;
    data.profile.time_nanos = record->start_ns;
    data.profile.period_ns = record->hz ? 1'000'000'000ull / record->hz : 0;
    data.profile.clock = format::describe_clock(record->clock);
    data.ppid = record->ppid;
    data.hz = record->hz;
    data.end_reason = static_cast<format::profraw::EndReason>(record->end_reason);
    data.signal = record->signal;
    data.cpu_ns = record->cpu_ns;
    data.start_clock = format::describe_clock(record->start_clock);
    profile.stem = program_of(*record) + "." + std::to_string(record->pid);
    sinks.add(std::move(profile));
  }
  return sinks.finish();
}

std::map<int64_t, std::string> remove_unfinished_dumps(const Conversion& c, const fs::path& dir,
                                                       const std::string& run_id, fs::file_time_type run_start,
                                                       const std::function<bool(int64_t)>& alive) {
  std::map<int64_t, std::string> lost;
  const std::string token = run_token(run_id);
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    const std::optional<format::DumpName> name = format::parse_dump_name(entry.path().filename().string());
    if (!name || !name->temporary() || name->token != token) continue;
    std::string bytes;
    try {
      bytes = format::read_file(entry.path().string());
    } catch (const std::exception&) {
      continue;
    }
    if (bytes.empty()) continue;  // a placeholder (list_run_files)
    bool ours;
    try {
      const format::profraw::Header header = format::read_profraw_header(bytes);
      ours = std::string(header.run_id, strnlen(header.run_id, sizeof header.run_id)) == run_id;
    } catch (const format::FormatError&) {
      ours = fs::last_write_time(entry.path(), ec) >= run_start && !ec;
    }
    if (!ours) continue;
    const int64_t pid = name->writer;
    if (alive(pid)) continue;
    fs::remove(entry.path(), ec);
    auto dumped = c.dumped.find(pid);
    if (dumped != c.dumped.end() && dumped->second) continue;
    lost[pid] = entry.path().string();
  }
  return lost;
}

std::map<int64_t, std::string> remove_placeholders(const RunFiles& files, const std::function<bool(int64_t)>& alive) {
  std::map<int64_t, std::string> left;
  std::error_code ec;
  for (const auto& [pid, paths] : files.placeholders) {
    if (alive(pid)) continue;  // it will replace its own
    for (const fs::path& path : paths) fs::remove(path, ec);
    const std::string file = paths.front().filename().string();
    const std::optional<format::DumpName> name = format::parse_dump_name(file, pid);
    left.emplace(pid, name ? name->program : file);
  }
  return left;
}

}  // namespace profiling::cli
