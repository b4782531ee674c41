#include "inside_snapshots.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <tuple>
#include <vector>

#include "conversion_snapshots.h"
#include "errno_text.h"
#include "format/file_io.h"
#include "format/run_names.h"
#include "run_dumps.h"

namespace profiling::cli {

namespace fs = std::filesystem;

namespace {

int64_t realtime_ns() {
  timespec t{};
  ::clock_gettime(CLOCK_REALTIME, &t);
  return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

// A sample's identity across two dumps: its leaf, callers, whether the
// chain was cut, and its thread.
using SampleKey = std::tuple<uint64_t, std::vector<uint64_t>, bool, int32_t>;

SampleKey key_of(const format::Profile& p, const format::Sample& s) {
  const auto callers = p.stacks.callers(s.stack);
  return {s.address, std::vector<uint64_t>(callers.begin(), callers.end()), p.stacks.truncated(s.stack), s.tid};
}

// Snapshots are files of their own, each an interval of one process.
ConvertOptions snapshot_options(ConvertOptions convert, const fs::path& dir) {
  convert.share = false;
  convert.dir = dir;
  convert.reshape = nullptr;
  return convert;
}

}  // namespace

format::ProfrawData subtract_dump(const format::ProfrawData& a, const format::ProfrawData& b) {
  format::ProfrawData d = a;
  d.profile.samples.clear();
  d.profile.stacks = format::StackTable();
  // Counts and observations (issue 22) of the earlier dump, per sample.
  std::map<SampleKey, std::pair<uint64_t, uint64_t>> before;
  for (const format::Sample& s : b.profile.samples) {
    auto& [count, observations] = before[key_of(b.profile, s)];
    count += s.count;
    observations += s.observations;
  }
  for (const format::Sample& s : a.profile.samples) {
    SampleKey key = key_of(a.profile, s);
    auto& [taken, taken_observations] = before[key];
    const uint64_t left = s.count > taken ? s.count - taken : 0;
    const uint64_t left_observations = s.observations > taken_observations ? s.observations - taken_observations : 0;
    taken -= std::min(taken, s.count);
    taken_observations -= std::min(taken_observations, s.observations);
    if (left == 0) continue;
    const auto& [leaf, callers, truncated, tid] = key;
    format::Sample sample{leaf, left, s.pid, d.profile.stacks.intern(callers, truncated), tid};
    // A count left has a draw behind it, when the dumps record draws.
    if (d.profile.has_observations) sample.observations = std::max<uint64_t>(left_observations, 1);
    d.profile.samples.push_back(sample);
  }
  d.profile.has_observations = a.profile.has_observations && b.profile.has_observations;
  if (!d.profile.has_observations)
    for (format::Sample& sample : d.profile.samples) sample.observations = 0;
  d.profile.dropped = a.profile.dropped > b.profile.dropped ? a.profile.dropped - b.profile.dropped : 0;
  d.profile.stacks_dropped =
      a.profile.stacks_dropped > b.profile.stacks_dropped ? a.profile.stacks_dropped - b.profile.stacks_dropped : 0;
  d.cpu_ns = a.cpu_ns > b.cpu_ns ? a.cpu_ns - b.cpu_ns : 0;
  d.signals = a.signals > b.signals ? a.signals - b.signals : 0;
  d.unsampled.clear();
  for (const format::profraw::Unsampled& u : a.unsampled) {
    uint64_t earlier = 0;
    for (const format::profraw::Unsampled& v : b.unsampled)
      if (v.cause == u.cause) earlier += v.cpu_ns;
    if (u.cpu_ns <= earlier) continue;
    format::profraw::Unsampled rest = u;
    rest.cpu_ns = u.cpu_ns - earlier;
    d.unsampled.push_back(rest);
  }
  return d;
}

InsideSnapshots::InsideSnapshots(fs::path dir, std::string token, double every_s, ConvertOptions convert)
    : dir_(std::move(dir)),
      token_(std::move(token)),
      every_s_(every_s),
      convert_(snapshot_options(std::move(convert), dir_)),
      sinks_(convert_) {}

InsideSnapshots::~InsideSnapshots() {
  stop();
  if (!request_.empty()) {
    std::error_code ec;
    fs::remove(request_, ec);
  }
}

std::string InsideSnapshots::prepare(std::string* why) {
  const fs::path path = dir_ / format::snapshot_request_name(token_);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    *why = path.string() + ": " + errno_text(errno);
    return "";
  }
  ::close(fd);
  request_ = path;
  return path.string();
}

void InsideSnapshots::start() {
  interval_start_ns_ = realtime_ns();
  clock_.start(IntervalClock::clock::now(), every_s_, 0, [this] { tick(); });
}

void InsideSnapshots::stop() { clock_.stop(); }

void InsideSnapshots::tick() {
  // The answers to the last request, then the next request: each
  // snapshot is read one interval after it was asked for.
  if (asked_) cut();
  if (const int fd = ::open(request_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC); fd >= 0) {
    (void)!::write(fd, "s", 1);
    ::close(fd);
    asked_ = true;
  }
}

void InsideSnapshots::cut() {
  const RunFiles files = list_run_files(dir_, token_);
  std::vector<ProcessProfile> profiles;
  ++snapshot_;
  const int64_t now = realtime_ns();
  for (const fs::path& raw : files.dumps) {
    // A dump is replaced by a rename, never rewritten in place: the same
    // inode and size as at the last cut is the dump already read (an ended
    // process's final one stays for the rest of the run, and was read
    // again at every cut).
    struct stat st{};
    if (::stat(raw.c_str(), &st) != 0) continue;
    const DumpIdentity identity{st.st_ino, st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec};
    if (auto seen = read_.find(raw.string()); seen != read_.end() && seen->second == identity) continue;
    read_[raw.string()] = identity;
    std::string bytes, problem;
    format::ProfrawData data;
    try {
      if (!format::try_read_file(raw.string(), &bytes, &problem, format::kMaxInputSize, false))
        throw format::FormatError(problem);
      data = format::read_profraw(bytes);
    } catch (const std::exception&) {
      read_.erase(raw.string());  // not of this run, or being replaced: read at the next cut
      continue;
    }
    const auto name = format::parse_dump_name(raw.filename().string(), data.profile.pid);
    if (!name) continue;
    const std::string stem = name->stem();
    auto last = last_.find(stem);
    format::ProfrawData interval = subtract_dump(data, last == last_.end() ? format::ProfrawData() : last->second);
    last_[stem] = std::move(data);
    if (interval.profile.samples.empty() && interval.unsampled.empty()) continue;
    interval.profile.time_nanos = interval_start_ns_;
    interval.profile.duration_ns = static_cast<uint64_t>(now - interval_start_ns_);
    interval.end_reason = format::profraw::EndReason::checkpoint;
    ProcessProfile p;
    p.data = std::move(interval);
    p.stem = stem + ".s" + std::to_string(snapshot_);
    profiles.push_back(std::move(p));
  }
  interval_start_ns_ = now;
  for (ProcessProfile& p : profiles) sinks_.add(std::move(p));
  Conversion c = sinks_.finish();
  for (ProcessSummary& p : c.processes) p.snapshot = true;
  std::lock_guard<std::mutex> hold(lock_);
  append_conversion(&written_, std::move(c));
}

void InsideSnapshots::reshape(ProcessProfile& profile) {
  auto last = last_.find(profile.stem);
  if (last != last_.end()) profile.data = subtract_dump(profile.data, last->second);
  profile.data.profile.time_nanos = interval_start_ns_;
  profile.data.profile.duration_ns = static_cast<uint64_t>(realtime_ns() - interval_start_ns_);
  profile.stem += ".s" + std::to_string(snapshot_ + 1);
}

Conversion InsideSnapshots::take_written() {
  std::lock_guard<std::mutex> hold(lock_);
  return std::move(written_);
}

}  // namespace profiling::cli
