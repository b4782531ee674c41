#include "conversion_snapshots.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace profiling::cli {

void append_conversion(Conversion* into, Conversion later) {
  into->files.insert(into->files.end(), later.files.begin(), later.files.end());
  for (ProcessSummary& p : later.processes) into->processes.push_back(std::move(p));
  into->losses.insert(into->losses.end(), later.losses.begin(), later.losses.end());
  // Each said once: a renewed symbolizer (outside_run_write.cc) finds the
  // same missing objects again.
  for (std::string& w : later.warnings)
    if (std::find(into->warnings.begin(), into->warnings.end(), w) == into->warnings.end())
      into->warnings.push_back(std::move(w));
  if (!later.shared_file.empty()) {
    into->shared_file = later.shared_file;
    into->shared_processes += later.shared_processes;
  }
}

void fold_ended(Conversion* c) {
  using format::profraw::EndReason;
  std::set<std::string> ended;  // image stems
  for (const ProcessSummary& p : c->processes)
    // CPU time's alone: another event's summaries are counts, said apart
    // (outside_cli.h), and kept.
    if (p.event.empty() && p.end_reason != EndReason::checkpoint && p.end_reason != EndReason::exec)
      ended.insert(p.image_stem);
  if (ended.empty()) return;
  FoldedProcesses& f = c->folded;
  ProcessSummary& sum = f.sum;
  std::map<std::string, std::pair<size_t, bool>> images;  // stem -> (snapshots, sampled)
  std::set<std::string> dropped_files;
  std::vector<ProcessSummary> kept;
  for (ProcessSummary& p : c->processes) {
    if (!p.event.empty() || !ended.contains(p.image_stem)) {
      kept.push_back(std::move(p));
      continue;
    }
    auto& [snapshots, sampled] = images[p.image_stem];
    ++snapshots;
    sampled = sampled || p.samples > 0;
    sum.samples += p.samples;
    sum.dropped += p.dropped;
    sum.own_samples += p.own_samples;
    sum.unsampled_counts += p.unsampled_counts;
    sum.cut_stacks += p.cut_stacks;
    sum.with_stacks += p.with_stacks;
    sum.period_ns = p.period_ns;
    sum.clock = p.clock;
    sum.start_clock = p.start_clock;
    sum.hz = p.hz;
    sum.outside = p.outside;
    for (const format::profraw::Unsampled& record : p.unsampled) {
      auto same = std::find_if(sum.unsampled.begin(), sum.unsampled.end(),
                               [&](const format::profraw::Unsampled& u) { return u.cause == record.cause; });
      if (same == sum.unsampled.end()) {
        sum.unsampled.push_back(record);
        continue;
      }
      constexpr uint32_t kListed = std::size(format::profraw::Unsampled{}.tids);
      for (uint32_t i = 0; i < std::min(record.threads, kListed) && same->threads + i < kListed; ++i)
        same->tids[same->threads + i] = record.tids[i];
      same->threads += record.threads;
      same->cpu_ns += record.cpu_ns;
    }
    dropped_files.insert(p.files.begin(), p.files.end());
  }
  for (const auto& [stem, image] : images) {
    ++f.pids;
    f.sampled_pids += image.second ? 1 : 0;
    f.snapshots = std::max(f.snapshots, image.first);
  }
  const size_t files_before = c->files.size();
  std::erase_if(c->files, [&](const std::string& file) { return dropped_files.contains(file); });
  f.files += files_before - c->files.size();
  sum.label = std::to_string(f.pids) + (f.pids == 1 ? " process" : " processes") + " that ended";
  kept.shrink_to_fit();
  c->processes = std::move(kept);
  c->files.shrink_to_fit();
}

}  // namespace profiling::cli
