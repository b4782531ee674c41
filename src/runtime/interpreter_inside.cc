// ASYNC-SIGNAL-SAFE but sample_on_the_sampled_thread (interpreter_inside.h).
#include "runtime/interpreter_inside.h"

#include "format/profile.h"
#include "sampler/python_sampling.h"
#include "sampler/sampler.h"

namespace profiling::runtime {
namespace {

using sampler::kMaxInsidePythonFrames;

// A stack's merge, in static memory (one dump at a time).
interp::RawFrame g_raw[kMaxInsidePythonFrames];
uint64_t g_shown[kMaxInsidePythonFrames];
uint64_t g_merged[sampler::kMaxStackDepth + kMaxInsidePythonFrames + 1];

}  // namespace

void merge_stored_frames(StackVisitor& inner, const uint64_t* pcs, uint32_t depth, bool truncated, uint64_t weight,
                         int32_t tid, uint32_t observations, NameStoredFrame name, interp::EvalLoop loop,
                         uint64_t base, uint64_t between, bool native_truncated) {
  uint32_t native = 0;
  while (native < depth && !sampler::is_python_marker(pcs[native])) ++native;
  if (native == depth) {
    inner.visit(pcs, native, truncated, weight, tid, observations, format::kGilUnknown);
    return;
  }
  const uint8_t gil = sampler::marker_gil(pcs[native]);
  interp::WalkResult walk;
  walk.status = sampler::marker_status(pcs[native]);
  walk.count = (depth - native - 1) / 2;
  if (walk.count > kMaxInsidePythonFrames) walk.count = kMaxInsidePythonFrames;
  for (uint32_t i = 0; i < walk.count; ++i) {
    g_raw[i].code = pcs[native + 1 + 2 * i];
    sampler::decode_instruction(pcs[native + 2 + 2 * i], &g_raw[i]);
    g_shown[i] = name(g_raw[i].code, g_raw[i].instruction);
  }
  if (native > sampler::kMaxStackDepth) native = sampler::kMaxStackDepth;
  const interp::MergeResult merged = interp::merge_python_frames(
      pcs, native, g_raw, g_shown, walk, loop, base, g_merged, static_cast<uint32_t>(sizeof g_merged / sizeof g_merged[0]),
      /*at_sample=*/true, between, native_truncated);
  inner.visit(g_merged, merged.count, truncated, weight, tid, observations, gil);
}

void sample_on_the_sampled_thread() {
  sampler::ClockSettings settings = sampler::clock_settings();
  if (settings.requested == sampler::ClockKind::automatic) {
    settings.requested = sampler::ClockKind::perf_signal;
    sampler::set_clock_settings(settings);
  }
}

}  // namespace profiling::runtime
