#include "outside/ruby_frames.h"

#include <algorithm>

#include "interp/python_merge.h"
#include "interp/ruby_walk.h"

namespace profiling::outside {

namespace {
// Frames read per sample at most (deeper stacks keep their innermost: the
// walk says kTruncated and the sample counts as a misfit).
constexpr uint32_t kMaxRubyDepth = 512;
}  // namespace

RubyFrames::RubyFrames(const interp::RubyTarget& target, RubyReads* reads)
    : target_(target), reads_(*reads), memory_(target.pid), threads_(target_, memory_), namer_(target_.layout, cached_) {}

std::unique_ptr<RubyFrames> RubyFrames::open_if_ruby(pid_t pid, const std::vector<MappedCode>& code,
                                                     RubyReads* reads) {
  const bool maps_ruby = std::any_of(code.begin(), code.end(), [](const MappedCode& m) {
    return interp::is_ruby_file(m.path.substr(m.path.rfind('/') + 1));
  });
  if (!maps_ruby) return nullptr;
  std::string why;
  auto target = interp::find_ruby(pid, &why);
  if (!target) {
    // A Ruby of another version, or a libruby without its symbols: said
    // once in the run's summary. A ruby program whose libruby is not mapped
    // yet is looked at again with its next mappings.
    if (why.starts_with("Ruby ")) reads->not_read = why;
    return nullptr;
  }
  return std::unique_ptr<RubyFrames>(new RubyFrames(*target, reads));
}

void RubyFrames::merge(pid_t tid, uint64_t time, bool native_truncated, std::vector<uint64_t>* frames) {
  const interp::EvalLoop loop{target_.eval_loop_start, target_.eval_loop_end};
  // A thread outside the VM (Ruby's timer thread, a C library's own) has
  // no Ruby frames to place.
  if (std::none_of(frames->begin(), frames->end(), [&](uint64_t a) { return loop.contains(a); })) return;
  cached_.forget();  // the memory moved on since the last sample
  const uint64_t ec = threads_.execution_context(tid);
  if (ec == 0) return;
  raw_.resize(kMaxRubyDepth);
  const interp::WalkResult walk = interp::walk_ruby_frames(target_.layout, cached_, ec, raw_.data(), kMaxRubyDepth);
  if (walk.count == 0) return;
  shown_.resize(walk.count);
  names_.name(namer_, raw_.data(), walk.count, time, kRubyUnnamedAddress, shown_.data());
  ++reads_.merged;
  merged_frames_.resize(frames->size() + walk.count + 1);
  const interp::MergeResult result = interp::merge_python_frames(
      frames->data(), static_cast<uint32_t>(frames->size()), raw_.data(), shown_.data(), walk, loop,
      kRubyMisfitAddress, merged_frames_.data(), static_cast<uint32_t>(merged_frames_.size()), false, 0,
      native_truncated);
  if (!result.fits) ++reads_.misfits;
  merged_frames_.resize(result.count);
  frames->swap(merged_frames_);
}

void RubyFrames::name_frames(std::map<uint64_t, std::vector<format::Frame>>* frames) const {
  names_.name_frames(frames);
}

}  // namespace profiling::outside
