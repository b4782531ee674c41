#include "outside_run.h"

#include <chrono>
#include <cmath>
#include <cstdlib>

namespace profiling::cli {

std::optional<double> parse_duration(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || !std::isfinite(value) || value <= 0) return std::nullopt;
  const std::string unit(end);
  if (unit.empty() || unit == "s") return value;
  if (unit == "ms") return value / 1000;
  if (unit == "m") return value * 60;
  if (unit == "h") return value * 3600;
  return std::nullopt;
}

OutsideRun::OutsideRun(const OutsideRunOptions& options)
    : options_(options), sampler_(outside::SamplerOptions{.hz = options.hz, .stacks = options.stacks}) {}

OutsideRun::~OutsideRun() {
  {
    std::lock_guard<std::mutex> hold(lock_);
    finishing_ = true;
  }
  wake_.notify_all();
  if (clock_.joinable()) clock_.join();
}

std::string OutsideRun::open_before_exec(pid_t pid) { return sampler_.open_before_exec(pid); }
std::string OutsideRun::attach(pid_t pid) { return sampler_.attach(pid); }

void OutsideRun::start() {
  sampler_.start();
  if (options_.duration_s > 0 || options_.every_s > 0) clock_ = std::thread([this] { clock_loop(); });
}

bool OutsideRun::duration_over() const {
  std::lock_guard<std::mutex> hold(lock_);
  return sampling_over_;
}

// Stems: <name>.<pid>, .<n> for an image after an exec whose name is the
// same (the preload's rule), .s<k> for the k-th snapshot.
void OutsideRun::write(bool final) {
  std::vector<outside::ImageProfile> images = sampler_.take(final);
  std::vector<ProcessProfile> profiles;
  const bool snapshots = options_.every_s > 0;
  if (snapshots) ++snapshot_;
  for (outside::ImageProfile& image : images) {
    if (image.data.profile.samples.empty() && image.data.unsampled.empty()) continue;
    ProcessProfile p;
    // One stem per process image for the whole run: <name>.<pid>, with
    // .<generation> only when an earlier image of that pid had the name.
    const std::pair<int64_t, int> key{image.data.profile.pid, image.generation};
    auto [it, added] = stems_.try_emplace(key);
    if (added) {
      it->second = image.name + "." + std::to_string(image.data.profile.pid);
      if (!used_stems_.insert(it->second).second) {
        it->second += "." + std::to_string(image.generation);
        used_stems_.insert(it->second);
      }
    }
    p.stem = it->second;
    if (snapshots) p.stem += ".s" + std::to_string(snapshot_);
    p.data = std::move(image.data);
    profiles.push_back(std::move(p));
  }
  // Snapshots are files of their own, each an interval of one process; a
  // whole run's small processes share one file, as the inside source's do.
  ConvertOptions convert = options_.convert;
  convert.share = !snapshots;
  convert.dir = options_.dir;
  Conversion c = convert_profiles(std::move(profiles), convert);
  conversion_.files.insert(conversion_.files.end(), c.files.begin(), c.files.end());
  for (ProcessSummary& p : c.processes) {
    p.outside = true;
    conversion_.processes.push_back(std::move(p));
  }
  conversion_.losses.insert(conversion_.losses.end(), c.losses.begin(), c.losses.end());
  conversion_.warnings.insert(conversion_.warnings.end(), c.warnings.begin(), c.warnings.end());
  if (!c.shared_file.empty()) {
    conversion_.shared_file = c.shared_file;
    conversion_.shared_processes += c.shared_processes;
  }
}

void OutsideRun::clock_loop() {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  const auto seconds = [](double s) { return std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(s)); };
  auto next_snapshot = options_.every_s > 0 ? start + seconds(options_.every_s) : clock::time_point::max();
  const auto stop_at = options_.duration_s > 0 ? start + seconds(options_.duration_s) : clock::time_point::max();
  std::unique_lock<std::mutex> hold(lock_);
  while (!finishing_) {
    const auto until = std::min(next_snapshot, stop_at);
    if (until == clock::time_point::max()) break;
    if (wake_.wait_until(hold, until, [this] { return finishing_; })) break;
    const auto now = clock::now();
    if (now >= stop_at) {
      // Sampling ends here; the program runs on unprofiled.
      sampling_over_ = true;
      hold.unlock();
      sampler_.stop();
      write(true);
      return;
    }
    if (now >= next_snapshot) {
      hold.unlock();
      write(false);
      hold.lock();
      next_snapshot += seconds(options_.every_s);
    }
  }
}

Conversion OutsideRun::finish() {
  {
    std::lock_guard<std::mutex> hold(lock_);
    finishing_ = true;
  }
  wake_.notify_all();
  if (clock_.joinable()) clock_.join();
  bool over;
  {
    std::lock_guard<std::mutex> hold(lock_);
    over = sampling_over_;
  }
  if (!over) {
    sampler_.stop();
    write(true);
  }
  return std::move(conversion_);
}

}  // namespace profiling::cli
