// The C API of profil(2), sprofil() and pcsample(): argument rules and
// errno per the manual pages, over the sampler's sinks.
#include <sys/time.h>

#include <cerrno>
#include <mutex>

#include "profil/profil.h"
#include "runtime/export.h"
#include "runtime/personality.h"
#include "runtime/process_hooks.h"
#include "sampler/sampler.h"

namespace profiling::runtime {
namespace {

// The profil() buffer in force, for the OpenBSD rule that a second buffer is
// EALREADY.
std::mutex g_profil_mutex;
const void* g_profil_buffer = nullptr;

int fail(int error) {
  errno = error;
  return -1;
}

}  // namespace
}  // namespace profiling::runtime

using namespace profiling;

extern "C" {

PROFIL_EXPORT int profil(unsigned short* buf, size_t bufsiz, size_t offset, unsigned int scale) __THROW {
  // <unistd.h> declares buf __nonnull, yet the pages make NULL "off": hide
  // the pointer from the optimizer so the check below is not folded away.
  asm("" : "+r"(buf));
  runtime::ensure_process_hooks();
  const profil_personality personality = runtime::current_personality();
  const runtime::PersonalityRules rules = runtime::rules_for(personality);
  std::lock_guard lock(runtime::g_profil_mutex);

  // Off: scale 0 or a NULL buffer everywhere; Solaris and OSF/1 also scale 1.
  // (glibc keeps sampling into bin 0 at scale 0: that is not what the pages say.)
  if (buf == nullptr || scale == 0 || (rules.scale_one_turns_off && scale == 1)) {
    sampler::clear_histogram();
    runtime::g_profil_buffer = nullptr;
    return 0;
  }
  if (scale > rules.max_scale) return runtime::fail(EINVAL);
  if (rules.second_buffer_ealready && runtime::g_profil_buffer != nullptr &&
      runtime::g_profil_buffer != buf)
    return runtime::fail(EALREADY);
  const size_t nbins = bufsiz / sizeof(unsigned short);
  if (!runtime::memory_is_writable(buf, nbins * sizeof(unsigned short))) return runtime::fail(EFAULT);

  sampler::HistogramSpec spec;
  // Solaris: "rendered ineffective by giving a bufsiz value of 0" — sampling
  // runs but counts nowhere; the other systems behave the same way.
  sampler::Region region;
  region.bins = buf;
  region.nbins = nbins;
  region.offset = offset;
  region.scale = scale;
  region.width = sampler::BinWidth::u16;
  region.arithmetic = rules.arithmetic;
  spec.regions.push_back(region);
  spec.limit = rules.limit;
  if (int error = sampler::set_histogram(spec); error != 0) return runtime::fail(error);
  runtime::g_profil_buffer = buf;
  return 0;
}

PROFIL_EXPORT int sprofil(struct prof* profp, int profcnt, struct timeval* tvp, unsigned int flags) __THROW {
  runtime::ensure_process_hooks();
  if (profcnt < 0) return runtime::fail(EINVAL);
  if (tvp != nullptr) {
    // The period it really samples at (glibc reports 10 ms while its timer
    // runs at every kernel tick).
    const unsigned hz = sampler::active_hz();
    const long usec = static_cast<long>(1'000'000 / hz);
    tvp->tv_sec = usec / 1'000'000;
    tvp->tv_usec = usec % 1'000'000;
  }
  if (profp == nullptr || profcnt == 0) {
    sampler::clear_histogram();
    return 0;
  }
  const auto width = (flags & PROF_UINT) ? sampler::BinWidth::u32 : sampler::BinWidth::u16;
  const size_t bin_bytes = static_cast<size_t>(width);
  sampler::HistogramSpec spec;
  const runtime::WritableMemory writable;  // one reading of the maps for every region
  for (int i = 0; i < profcnt; ++i) {
    const struct prof& p = profp[i];
    if (p.pr_scale > sampler::kMaxScale) return runtime::fail(EINVAL);
    if (p.pr_scale < 2) continue;  // glibc ignores such regions
    sampler::Region region;
    region.bins = p.pr_base;
    region.nbins = p.pr_size / bin_bytes;
    region.offset = p.pr_off;
    region.scale = static_cast<uint32_t>(p.pr_scale);
    region.width = width;
    if (region.nbins == 0) continue;
    if (p.pr_base == nullptr || !writable.covers(p.pr_base, region.nbins * bin_bytes))
      return runtime::fail(EFAULT);
    // <sys/profil.h>: the overflow bin is the region with offset 0 and scale
    // 2; PCs that fall in no other region count in its first bin.
    if (p.pr_off == 0 && p.pr_scale == 2) {
      spec.overflow = region;
      spec.has_overflow = true;
      continue;
    }
    spec.regions.push_back(region);
  }
  if (spec.regions.empty() && !spec.has_overflow) {
    sampler::clear_histogram();
    return 0;
  }
  if (int error = sampler::set_histogram(spec); error != 0) return runtime::fail(error);
  return 0;
}

PROFIL_EXPORT long pcsample(uintptr_t samples[], long nsamples) {
  runtime::ensure_process_hooks();
  if (nsamples < 0) return runtime::fail(EINVAL);
  if (nsamples > 0 && (samples == nullptr ||
                       !runtime::memory_is_writable(samples, static_cast<size_t>(nsamples) * sizeof(uintptr_t))))
    return runtime::fail(EFAULT);
  long previous = 0;
  if (int error = sampler::set_pc_buffer(nsamples > 0 ? samples : nullptr, static_cast<size_t>(nsamples), &previous);
      error != 0)
    return runtime::fail(error);
  return previous;
}

PROFIL_EXPORT int profil_set_clock(profil_clock clock, unsigned int hz) {
  sampler::ClockSettings settings;
  switch (clock) {
    case PROFIL_CLOCK_CPU: settings.requested = sampler::ClockKind::cpu; break;
    case PROFIL_CLOCK_PERF: settings.requested = sampler::ClockKind::perf; break;
    case PROFIL_CLOCK_AUTO: settings.requested = sampler::ClockKind::automatic; break;
    case PROFIL_CLOCK_WALL: settings.requested = sampler::ClockKind::wall; break;
    case PROFIL_CLOCK_PERF_SIGNAL: settings.requested = sampler::ClockKind::perf_signal; break;
    default: return runtime::fail(EINVAL);
  }
  settings.hz = hz;
  if (int error = sampler::set_clock_settings(settings); error != 0) return runtime::fail(error);
  return 0;
}

PROFIL_EXPORT unsigned int profil_sampling_hz(void) { return sampler::active_hz(); }

PROFIL_EXPORT profil_clock profil_active_clock(void) {
  switch (sampler::active_clock()) {
    case sampler::ClockKind::perf: return PROFIL_CLOCK_PERF;
    case sampler::ClockKind::wall: return PROFIL_CLOCK_WALL;
    case sampler::ClockKind::perf_signal: return PROFIL_CLOCK_PERF_SIGNAL;
    default: return PROFIL_CLOCK_CPU;
  }
}

PROFIL_EXPORT const char* profil_clock_fallback_reason(void) {
  static thread_local std::string reason;
  reason = sampler::clock_fallback_reason();
  return reason.empty() ? nullptr : reason.c_str();
}

PROFIL_EXPORT void profil_get_stats(profil_stats* out) {
  if (out == nullptr) return;
  const sampler::Stats s = sampler::stats();
  out->signals = s.signals;
  out->ticks = s.ticks;
  out->dropped = s.dropped;
  out->buffer_faults = s.buffer_faults;
}

}  // extern "C"
