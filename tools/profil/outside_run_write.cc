// OutsideRun's writing of each window's and the end's profiles: the
// images taken from the sampler, the empty one a window without samples
// writes (issue 32: every window is written), and the memory given back
// after each. Split from outside_run.cc to keep each room under 500 lines
// (the same class: outside_run.h).
#include "outside_run.h"

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <utility>

#include "conversion_snapshots.h"
#include "top_takes.h"

namespace profiling::cli {
namespace {

constexpr double kSymbolizerLifetimeS = 60;

}  // namespace

// The process given, as a take of a window without its samples would
// have it (the take lists only images with some): its name and program
// from /proc, the run's clock and rate.
outside::ImageProfile OutsideRun::empty_image(const outside::Event& event) const {
  outside::ImageProfile image;
  format::Profile& profile = image.data.profile;
  profile.pid = root_pid_;
  const std::string proc = "/proc/" + std::to_string(root_pid_);
  char exe[4096];
  if (const ssize_t n = ::readlink((proc + "/exe").c_str(), exe, sizeof exe - 1); n > 0) profile.program.assign(exe, n);
  // The stem the process already has, whatever its image's generation.
  for (const auto& [key, stem] : stems_)
    if (key.first == root_pid_) image.generation = key.second;
  if (FILE* comm = std::fopen((proc + "/comm").c_str(), "re")) {
    char name[64] = "";
    if (std::fgets(name, sizeof name, comm)) image.name.assign(name, strcspn(name, "\n"));
    std::fclose(comm);
  }
  if (image.name.empty()) image.name = profile.program.empty() ? "process" : profile.program.substr(profile.program.rfind('/') + 1);
  profile.clock = options_.wall ? "wall" : "perf";
  if (event.is_time()) {
    outside::SamplerOptions sampling;  // the period the samplers sample at
    sampling.hz = options_.hz;
    profile.period_ns = options_.hz > 0 ? sampling.period_ns() : 0;
  }
  else profile.event = event.name, profile.event_period = event.period;
  profile.duration_ns = static_cast<uint64_t>(options_.every_s * 1e9);
  profile.time_nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::system_clock::now().time_since_epoch()).count() - static_cast<int64_t>(profile.duration_ns);
  image.data.hz = options_.hz;
  image.data.end_reason = format::profraw::EndReason::checkpoint;
  image.data.start_clock = profile.clock;
  return image;
}

// Stems: <name>.<pid>, .<n> for an image after an exec whose name is the
// same (the preload's rule), .s<k> for the k-th snapshot.
void OutsideRun::write(bool final) {
  for (EventSampler& e : samplers_) {
    std::vector<outside::ImageProfile> images = e.sampler->take(final);
    if (&e == &samplers_.front() && !taken_live_.empty()) {
      sum_takes(&taken_live_, std::move(images));
      images = std::exchange(taken_live_, {});
    }
    write_images(std::move(images), e.event);
  }
}

std::vector<outside::ImageProfile> OutsideRun::take_live(bool keep) {
  std::vector<outside::ImageProfile> images = sampler().take(false);
  if (keep) sum_takes(&taken_live_, images);
  return images;
}

void OutsideRun::write_images(std::vector<outside::ImageProfile> images, const outside::Event& event) {
  std::vector<ProcessProfile> profiles;
  const bool snapshots = options_.every_s > 0;
  if (snapshots && &event == &samplers_.front().event) ++snapshot_;
  std::vector<std::pair<int64_t, int>> ended;  // their stems forgotten after this snapshot
  // A window in which nothing was sampled (the server starved by others'
  // threads, or idle) still has its file, the process given's, empty: 60
  // windows of an hour are 60 files, and a gap is seen as one (issue 32).
  const bool window_of_nothing =
      snapshots && root_pid_ > 0 && std::none_of(images.begin(), images.end(), [](const outside::ImageProfile& i) {
        return !i.data.profile.samples.empty() || !i.data.unsampled.empty();
      });
  if (window_of_nothing && std::none_of(images.begin(), images.end(), [&](const outside::ImageProfile& i) {
        return i.data.profile.pid == root_pid_ && !i.ended;
      }))
    images.push_back(empty_image(event));
  for (outside::ImageProfile& image : images) {
    if (image.ended) ended.emplace_back(image.data.profile.pid, image.generation);
    const bool empty_window = window_of_nothing && image.data.profile.pid == root_pid_ && !image.ended;
    if (image.data.profile.samples.empty() && image.data.unsampled.empty() && !empty_window) continue;
    ProcessProfile p;
    // One stem per process image for the whole run: <name>.<pid>, with
    // .<generation> only when an earlier image of that pid had the name.
    const std::pair<int64_t, int> key{image.data.profile.pid, image.generation};
    auto [it, added] = stems_.try_emplace(key);
    if (added) {
      // A name is a file name's start: a kernel thread's "kworker/0:0"
      // (attach --all) keeps no slash (issue 33), nor a leading dot.
      std::string name = image.name;
      std::replace(name.begin(), name.end(), '/', '_');
      if (name.empty() || name[0] == '.') name.insert(0, "_");
      it->second = name + "." + std::to_string(image.data.profile.pid);
      if (!used_stems_.insert(it->second).second) {
        it->second += "." + std::to_string(image.generation);
        used_stems_.insert(it->second);
      }
    }
    p.stem = it->second;
    // Another event than CPU time names itself (issue 33): a process's
    // files of several events lie side by side.
    if (!event.is_time()) p.stem += "." + event.name;
    if (snapshots) p.stem += ".s" + std::to_string(snapshot_);
    p.data = std::move(image.data);
    p.empty_window = empty_window;
    if (empty_window && &event == &samplers_.front().event)
      std::fprintf(stderr, "profil: snapshot %u: no samples in this window; %s.pb.gz written empty\n", snapshot_,
                   p.stem.c_str());
    profiles.push_back(std::move(p));
  }
  // Snapshots are files of their own, each an interval of one process; a
  // whole run's small processes share one file, as the inside source's do.
  ConvertOptions convert = options_.convert;
  // A count of events says nothing of a process's CPU: each has its file.
  convert.share = !snapshots && event.is_time();
  convert.dir = options_.dir;
  Conversion c;
  if (snapshots) {
    if (!snapshot_sinks_) snapshot_sinks_ = std::make_unique<ProfileSinks>(convert);
    for (ProcessProfile& p : profiles) snapshot_sinks_->add(std::move(p));
    c = snapshot_sinks_->finish();
    // The sinks' symbolizer keeps every object it opened, its debug file's
    // pages mapped, and every address it named: an hour attached to a
    // server grew 51 -> 60 MB in its first 10 minutes of 1-minute windows,
    // 11 MB of it the symbolizer's (issue 32). A new one for each minute of
    // windows bounds that to what a minute's samples touch, for one
    // symbolizer's start-up a minute (62 ms of CPU, bench/every.sh: 0.1 %);
    // the run says each warning once all the same (append_conversion).
    if (&event == &samplers_.front().event &&
        ++symbolizer_windows_ >= std::max(1.0, std::ceil(kSymbolizerLifetimeS / options_.every_s))) {
      snapshot_sinks_->renew_symbolizer();
      symbolizer_windows_ = 0;
    }
  } else {
    c = convert_profiles(std::move(profiles), convert);
  }
  for (ProcessSummary& p : c.processes) p.outside = true;
  // Hours attached (issue 32): what ended in earlier snapshots is folded
  // before this one's summaries join them, and an ended image's stem is
  // forgotten (its pid's next process gets one anew: another snapshot's
  // file name).
  if (snapshots && options_.fold_ended) fold_ended(&conversion_);
  append_conversion(&conversion_, std::move(c));
  if (snapshots) {
    for (const auto& key : ended)
      if (auto it = stems_.find(key); it != stems_.end()) {
        used_stems_.erase(it->second);
        stems_.erase(it);
      }
    // The converter's heap keeps what it freed (batch_heap.h: a report's
    // work); between snapshots it goes back to the system, else profil's
    // resident memory is the largest window's and its fragments (RSS +25 %
    // in 3 minutes of 5-second windows, issue 32).
    ::malloc_trim(0);
  }
}

}  // namespace profiling::cli
