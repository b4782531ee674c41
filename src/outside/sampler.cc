#include "outside/sampler.h"

#include <ctime>
#include <filesystem>

#include "outside/perf_source.h"
#include "outside/reader_priority.h"
#include "outside/wall_poller.h"

namespace profiling::outside {
namespace {

// Realtime minus monotonic now: perf's timestamps (CLOCK_MONOTONIC) to the
// Unix epoch.
int64_t realtime_offset_ns() {
  timespec mono{}, real{};
  ::clock_gettime(CLOCK_MONOTONIC, &mono);
  ::clock_gettime(CLOCK_REALTIME, &real);
  return (real.tv_sec - mono.tv_sec) * 1'000'000'000ll + (real.tv_nsec - mono.tv_nsec);
}

}  // namespace

Sampler::Sampler(SamplerOptions options)
    : options_(options),
      table_(std::make_unique<ProcessTable>(ProcessTable::Options{.sampling = options_, .realtime_offset_ns = realtime_offset_ns()})) {
  if (options_.interpreter_frames && options_.interpreter_frames_at_sample)
    table_->load_python_reads_with([this] { return load_python_reads(); });
  auto perf = std::make_unique<PerfSource>(feed(), options_);
  perf_ = perf.get();
  sources_.push_back(std::move(perf));
  if (options_.wall) {
    auto poller = std::make_unique<WallPoller>(feed(), options_, [this] { perf_->flush(); });
    poller_ = poller.get();
    sources_.push_back(std::move(poller));
  }
}

Sampler::~Sampler() { stop(); }

PythonStackReads* Sampler::load_python_reads() {
  python_at_sample_ = PythonStackReads::open(options_.period_ns(), &python_at_sample_refused_);
  if (python_at_sample_ == nullptr) return nullptr;
  return perf_->attach_python_reads(python_at_sample_.get()) ? python_at_sample_.get() : nullptr;
}

void Sampler::add(std::unique_ptr<Source> source) { sources_.push_back(std::move(source)); }

std::string Sampler::open_before_exec(pid_t pid) {
  for (auto& source : sources_)
    if (std::string why = source->open_before_exec(pid); !why.empty()) return why;
  return "";
}

std::string Sampler::attach(pid_t pid) {
  std::string why;
  run_raised([&] {
    for (auto& source : sources_)
      if (why = source->attach(pid); !why.empty()) return;
    std::lock_guard<FeedLock> hold(lock_);
    table_->add_running(pid, monotonic_ns());
  });
  return why;
}

std::string Sampler::attach_all() {
  for (auto& source : sources_)
    if (std::string why = source->attach_all(); !why.empty()) return why;
  std::error_code ec;
  std::vector<pid_t> pids;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.empty() && name.find_first_not_of("0123456789") == std::string::npos)
      pids.push_back(static_cast<pid_t>(std::stol(name)));
  }
  run_raised([&] {
    std::lock_guard<FeedLock> hold(lock_);
    const uint64_t now = monotonic_ns();
    for (const pid_t pid : pids) table_->add_running(pid, now);
  });
  return "";
}

void Sampler::start() {
  for (auto& source : sources_) source->start();
}

void Sampler::end_at(uint64_t monotonic_ns) {
  if (perf_ != nullptr) perf_->end_at(monotonic_ns);
}

void Sampler::pause() {
  for (auto it = sources_.rbegin(); it != sources_.rend(); ++it) (*it)->pause();
}

void Sampler::abandon() {
  for (auto it = sources_.rbegin(); it != sources_.rend(); ++it) (*it)->abandon();
  stopped_ = true;
}

void Sampler::stop() {
  if (stopped_) return;
  stopped_ = true;
  for (auto it = sources_.rbegin(); it != sources_.rend(); ++it) (*it)->stop();
}

std::string Sampler::map_rings_again() {
  for (auto& source : sources_)
    if (std::string why = source->resume_in_copy(); !why.empty()) return why;
  return "";
}

// The rings read up to now first: a take is a window of time, and a record
// written before it belongs in it. The reader reads every 100 ms or so, so
// a program's exit just before a take was read after it: its last samples
// went into the window after, which began after the process had ended
// (until the exit's time before the window's start: a duration of 0;
// Outside.SnapshotsAddUpToTheWholeRun beside two busy loops).
uint64_t Sampler::read_up_to_now() {
  const uint64_t now = monotonic_ns();
  for (auto& source : sources_) source->flush();
  return now;
}

std::vector<ImageProfile> Sampler::take(bool final) {
  const uint64_t now = read_up_to_now();
  std::lock_guard<FeedLock> hold(lock_);
  return table_->take(now, final);
}

std::vector<ImageProfile> Sampler::take_ended() {
  const uint64_t now = read_up_to_now();
  std::lock_guard<FeedLock> hold(lock_);
  return table_->take_ended(now);
}

std::vector<pid_t> Sampler::running() const {
  std::lock_guard<FeedLock> hold(lock_);
  return table_->running();
}

uint64_t Sampler::samples() const {
  std::lock_guard<FeedLock> hold(lock_);
  return table_->samples();
}

uint64_t Sampler::lost() const {
  std::lock_guard<FeedLock> hold(lock_);
  return table_->lost();
}

size_t Sampler::threads_unreadable() const { return poller_ != nullptr ? poller_->threads_unreadable() : 0; }
bool Sampler::samples_kernel() const { return perf_->samples_kernel(); }
uint64_t Sampler::throttled() const { return perf_->throttled(); }
unsigned Sampler::rings() const { return perf_->rings(); }
std::vector<std::string> Sampler::notes() const { return perf_->notes(); }

PythonReads Sampler::python_reads() const {
  std::lock_guard<FeedLock> hold(lock_);
  return table_->python_reads();
}

RubyReads Sampler::ruby_reads() const {
  std::lock_guard<FeedLock> hold(lock_);
  return table_->ruby_reads();
}

std::string Sampler::python_reads_refused() const {
  return !perf_->python_reads_refused().empty() ? perf_->python_reads_refused() : python_at_sample_refused_;
}

}  // namespace profiling::outside
