#include "top_takes.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <utility>

namespace profiling::cli {

void add_take(format::ProfrawData* whole, format::ProfrawData later) {
  format::Profile& into = whole->profile;
  format::Profile& from = later.profile;
  std::vector<uint64_t> callers;
  for (format::Sample sample : from.samples) {
    const auto chain = from.stacks.callers(sample.stack);
    callers.assign(chain.begin(), chain.end());
    sample.stack = into.stacks.intern(callers, from.stacks.truncated(sample.stack));
    into.samples.push_back(sample);
  }
  format::coalesce_samples(&into.samples);
  // A take lists the image's mappings as they are then: a library
  // unloaded since an earlier take stays, for the samples taken in it.
  for (format::Mapping& m : from.mappings)
    if (std::find(into.mappings.begin(), into.mappings.end(), m) == into.mappings.end())
      into.mappings.push_back(std::move(m));
  for (auto& [address, frames] : from.frames) into.frames[address] = std::move(frames);
  for (auto& [tid, name] : from.thread_names) into.thread_names[tid] = std::move(name);
  if (into.program.empty()) into.program = std::move(from.program);
  format::saturating_add(into.duration_ns, from.duration_ns);
  format::saturating_add(into.dropped, from.dropped);
  format::saturating_add(into.own_samples, from.own_samples);
  format::saturating_add(into.stacks_dropped, from.stacks_dropped);
  into.has_observations = into.has_observations && from.has_observations;
  format::saturating_add(whole->cpu_ns, later.cpu_ns);
  format::saturating_add(whole->signals, later.signals);
  for (const format::profraw::Unsampled& u : later.unsampled) {
    auto same = std::find_if(whole->unsampled.begin(), whole->unsampled.end(),
                             [&](const format::profraw::Unsampled& w) { return w.cause == u.cause; });
    if (same == whole->unsampled.end()) {
      whole->unsampled.push_back(u);
      continue;
    }
    format::saturating_add(same->cpu_ns, u.cpu_ns);
    // The first threads' ids, each once, as many as the record holds.
    for (int32_t tid : u.tids) {
      if (tid == 0) break;
      auto* end = same->tids + std::size(same->tids);
      auto* free = std::find(same->tids, end, 0);
      if (std::find(same->tids, free, tid) == free && free != end) *free = tid;
    }
    // Ended threads end once: each take's are others.
    same->threads = same->threads + u.threads < same->threads ? UINT32_MAX : same->threads + u.threads;
  }
  whole->end_reason = later.end_reason;
  whole->signal = later.signal;
}

void sum_takes(std::vector<outside::ImageProfile>* kept, std::vector<outside::ImageProfile> more) {
  for (outside::ImageProfile& image : more) {
    auto same = std::find_if(kept->begin(), kept->end(), [&](const outside::ImageProfile& k) {
      return k.data.profile.pid == image.data.profile.pid && k.generation == image.generation;
    });
    if (same == kept->end()) {
      kept->push_back(std::move(image));
      continue;
    }
    add_take(&same->data, std::move(image.data));
    same->ended = same->ended || image.ended;
    if (!image.name.empty()) same->name = std::move(image.name);
  }
}

}  // namespace profiling::cli
