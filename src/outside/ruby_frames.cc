#include "outside/ruby_frames.h"

#include <algorithm>

#include "interp/python_merge.h"
#include "interp/ruby_walk.h"
#include "outside/python_frames.h"
#include "outside/ruby_bpf.h"

namespace profiling::outside {

namespace {
// Frames read per sample at most (deeper stacks keep their innermost: the
// walk says kTruncated and the sample counts as a misfit).
constexpr uint32_t kMaxRubyDepth = 512;
// The execution context's bytes the walk reads first (ruby_walk.cc).
constexpr size_t kContextBytes = 24;
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
                                                     RubyReads* reads, PythonReads* python) {
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
  PythonStackReads* at_sample = python != nullptr ? python->reads_at_sample() : nullptr;
  return std::unique_ptr<RubyFrames>(new RubyFrames(*target, reads, at_sample));
}

bool RubyFrames::read_late(pid_t tid, interp::WalkResult* walk) {
  const uint64_t slot = threads_.context_slot(tid);
  const uint64_t ec = slot != 0 ? fetch_ahead(tid, slot) : 0;
  if (ec == 0) return false;
  // The program reads this thread's later samples itself, and those of
  // every thread the VM's list had (the lookup read them all).
  if (at_sample_ != nullptr)
    for (const auto& [thread, rb_thread] : threads_.all()) at_sample_->add_thread(thread, rb_thread);
  raw_.resize(kMaxRubyDepth);
  *walk = interp::walk_ruby_frames(target_.layout, ahead_, ec, raw_.data(), kMaxRubyDepth);
  remember_ahead(tid, ec);
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

uint64_t RubyFrames::fetch_ahead(pid_t tid, uint64_t slot) {
  using Range = interp::PrefetchedMemory::Range;
  Range ranges[interp::PrefetchedMemory::kRanges] = {{slot, 8}};
  size_t count = 1;
  const auto it = ahead_of_.find(tid);
  if (it != ahead_of_.end()) {
    const Ahead& a = it->second;
    // The execution context's fields the walk reads first (ruby_walk.cc).
    ranges[count++] = {a.ec, kContextBytes};
    if (a.values_end >= a.frames) {
      ranges[count++] = {a.stack, a.end - a.stack};
    } else {
      ranges[count++] = {a.stack, a.values_end - a.stack};
      ranges[count++] = {a.frames, a.end - a.frames};
    }
    for (size_t i = 0; i < a.elsewhere_count && count < std::size(ranges); ++i) ranges[count++] = {a.elsewhere[i], 8};
  }
  ahead_.fetch(ranges, count);
  uint64_t ec = 0;
  if (!interp::read_u64(ahead_, slot, &ec) || ec == 0) return 0;
  if (it == ahead_of_.end() || it->second.ec != ec) {
    const Range context{ec, kContextBytes};
    ahead_.fetch(&context, 1);
  }
  return ec;
}

void RubyFrames::remember_ahead(pid_t tid, uint64_t ec) {
  // What the walk just read, read again from what it fetched (no call):
  // its control frames from cfp up, and the environments they point to
  // that lie in the VM stack. A little more of both, for a stack a few
  // frames deeper next time.
  const interp::RubyLayout& layout = target_.layout;
  uint8_t context[kContextBytes];
  if (!ahead_.read(ec, context, sizeof context)) return;
  const uint64_t stack = interp::u64_at(context, layout.ec_vm_stack);
  const uint64_t end = stack + interp::u64_at(context, layout.ec_vm_stack_size) * 8;
  const uint64_t cfp = interp::u64_at(context, layout.ec_cfp);
  if (stack == 0 || cfp < stack || cfp > end || end - stack > (64u << 20)) return;
  Ahead& a = ahead_of_[tid];
  a.elsewhere_count = 0;
  uint64_t values_end = stack;
  uint32_t frames = 0;
  for (uint64_t at = cfp; at + layout.cfp_size <= end && frames < kMaxRubyDepth; at += layout.cfp_size, ++frames) {
    uint64_t ep = 0;
    if (!interp::read_u64(ahead_, at + layout.cfp_ep, &ep)) break;
    if (ep >= stack && ep < cfp)
      values_end = std::max(values_end, ep + 8);
    else if (ep != 0 && a.elsewhere_count < Ahead::kElsewhere)
      a.elsewhere[a.elsewhere_count++] = ep;
  }
  constexpr uint64_t kDeeper = 8;  // frames
  a.ec = ec;
  a.stack = stack;
  a.end = end;
  a.values_end = std::min(values_end + kDeeper * 64, end);
  a.frames = cfp - stack > kDeeper * layout.cfp_size ? cfp - kDeeper * layout.cfp_size : stack;
}

void RubyFrames::name_frames(std::map<uint64_t, std::vector<format::Frame>>* frames) const {
  names_.name_frames(frames);
}

}  // namespace profiling::outside
