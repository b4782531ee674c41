#include "outside/ruby_frames.h"

#include <algorithm>

#include "interp/python_merge.h"
#include "interp/ruby_walk.h"
#include "outside/ruby_bpf.h"

namespace profiling::outside {

namespace {
// Frames read per sample at most (deeper stacks keep their innermost: the
// walk says kTruncated and the sample counts as a misfit).
constexpr uint32_t kMaxRubyDepth = 512;
}  // namespace

RubyFrames::RubyFrames(const interp::RubyTarget& target, RubyReads* reads, PythonStackReads* at_sample)
    : target_(target),
      reads_(*reads),
      at_sample_(at_sample),
      memory_(target.pid),
      threads_(target_, memory_),
      namer_(target_.layout, cached_) {
  if (at_sample_ != nullptr && !add_ruby_process(*at_sample_, target_.pid, target_.layout)) at_sample_ = nullptr;
}

RubyFrames::~RubyFrames() {
  if (at_sample_ != nullptr) forget_ruby_process(*at_sample_, target_.pid);
}

std::unique_ptr<RubyFrames> RubyFrames::open_if_ruby(pid_t pid, const std::vector<MappedCode>& code,
                                                     RubyReads* reads, PythonStackReads* at_sample) {
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
  return std::unique_ptr<RubyFrames>(new RubyFrames(*target, reads, at_sample));
}

bool RubyFrames::read_late(pid_t tid, interp::WalkResult* walk) {
  const uint64_t ec = threads_.execution_context(tid);
  if (ec == 0) return false;
  // The program reads this thread's later samples itself, and those of
  // every thread the VM's list had (the lookup read them all).
  if (at_sample_ != nullptr)
    for (const auto& [thread, rb_thread] : threads_.all()) at_sample_->add_thread(thread, rb_thread);
  raw_.resize(kMaxRubyDepth);
  *walk = interp::walk_ruby_frames(target_.layout, cached_, ec, raw_.data(), kMaxRubyDepth);
  ++reads_.read_late;
  return true;
}

void RubyFrames::merge(pid_t tid, uint64_t time, bool native_truncated, std::vector<uint64_t>* frames) {
  const interp::EvalLoop loop{target_.eval_loop_start, target_.eval_loop_end};
  interp::WalkResult walk;
  // The walk the BPF program made as the sample was taken (taken even for
  // a sample that has no use for it, so that a later sample does not).
  const bool at_sample = at_sample_ != nullptr && at_sample_->take(tid, time, &raw_, &walk);
  // A thread outside the VM (Ruby's timer thread, a C library's own) has
  // no Ruby frames to place.
  if (std::none_of(frames->begin(), frames->end(), [&](uint64_t a) { return loop.contains(a); })) return;
  cached_.forget();  // the memory moved on since the last sample
  read_late_ = !at_sample;
  if (at_sample)
    ++reads_.read_at_sample;
  else if (!read_late(tid, &walk))
    return;
  if (walk.count == 0) return;
  shown_.resize(walk.count);
  names_.name(namer_, raw_.data(), walk.count, time, kRubyUnnamedAddress, shown_.data());
  ++reads_.merged;
  merged_frames_.resize(frames->size() + walk.count + 1);
  // At the sample, one rb_vm_exec more than entry frames is a call leaving
  // its frame (ruby_frames.h); after the fact it is as likely a stack that
  // moved, and stays a misfit.
  const interp::MergeResult result = interp::merge_python_frames(
      frames->data(), static_cast<uint32_t>(frames->size()), raw_.data(), shown_.data(), walk, loop,
      kRubyMisfitAddress, merged_frames_.data(), static_cast<uint32_t>(merged_frames_.size()), at_sample,
      kRubyEnteringAddress, native_truncated);
  if (!result.fits) ++(at_sample ? reads_.misfits_at_sample : reads_.misfits_late);
  merged_frames_.resize(result.count);
  frames->swap(merged_frames_);
}

void RubyFrames::name_frames(std::map<uint64_t, std::vector<format::Frame>>* frames) const {
  names_.name_frames(frames);
}

}  // namespace profiling::outside
