#include "outside/python_frames.h"

#include <algorithm>
#include <iterator>
#include <string_view>

#include "interp/python_merge.h"
#include "interp/python_walk.h"
#include "outside/source.h"

namespace profiling::outside {

namespace {
// Frames read per sample at most: deeper Python stacks keep their innermost
// frames (the walk says kTruncated and the native stack's outer eval-loop
// frames then have none: counted as a misfit).
constexpr uint32_t kMaxPythonDepth = 256;
}  // namespace

PythonFrames::PythonFrames(const interp::PythonTarget& target, PythonReads* reads)
    : target_(target),
      reads_(*reads),
      at_sample_(reads->reads_at_sample()),
      memory_(target.pid),
      threads_(target_, memory_),
      namer_(target_.layout, cached_, target_.code_type) {
  if (at_sample_ != nullptr && !at_sample_->add_process(target_.pid, target_.layout)) at_sample_ = nullptr;
  find_gil();
}

// 3.12+ make their GIL as the interpreter starts: asked again at a sample
// read after the fact until it is there.
void PythonFrames::find_gil() {
  if (!interp::find_python_gil(target_, memory_, &gil_)) return;
  if (at_sample_ != nullptr) at_sample_->set_gil(target_.pid, gil_);
}

PythonFrames::~PythonFrames() {
  if (at_sample_ != nullptr) at_sample_->forget_process(target_.pid);
}

std::unique_ptr<PythonFrames> PythonFrames::open(pid_t pid, std::string* why, PythonReads* reads) {
  auto target = interp::find_python(pid, why);
  if (!target) return nullptr;
  if (target->eval_loop_start == 0) {
    *why = target->image + ": no symbol of its evaluation loop (_PyEval_EvalFrameDefault, PyEval_EvalFrameEx)";
    return nullptr;
  }
  return std::unique_ptr<PythonFrames>(new PythonFrames(*target, reads));
}

std::unique_ptr<PythonFrames> PythonFrames::open_if_python(pid_t pid, const std::vector<MappedCode>& code,
                                                           PythonReads* reads) {
  const bool maps_python = std::any_of(code.begin(), code.end(), [](const MappedCode& m) {
    const std::string_view base = std::string_view(m.path).substr(m.path.rfind('/') + 1);
    return base.starts_with("python") || base.starts_with("libpython");
  });
  std::string why;
  return maps_python ? open(pid, &why, reads) : nullptr;
}

void PythonFrames::merge(pid_t tid, uint64_t time, bool native_truncated, std::vector<uint64_t>* frames) {
  bool has_eval_loop = false;
  for (const uint64_t address : *frames) has_eval_loop = has_eval_loop || in_eval_loop(address);
  interp::WalkResult walk;
  // The walk the BPF program made as the sample was taken (taken even for
  // a sample that has no use for it, so that a later sample does not).
  gil_state_ = format::kGilUnknown;
  const bool at_sample = at_sample_ != nullptr && at_sample_->take(tid, time, &raw_, &walk, &gil_state_);
  // A thread outside the loop (a native thread, the interpreter starting
  // or ending) has no Python frames to place.
  if (!has_eval_loop) return;
  cached_.forget();  // the memory moved on since the last sample
  ahead_.fetch(nullptr, 0);
  read_late_ = !at_sample;
  if (at_sample) {
    ++reads_.read_at_sample;
  } else {
    const uint64_t state = threads_.thread_state(tid);
    if (state == 0) {
      // The loop runs on a thread state, so the thread had one at the
      // sample: it is not in the interpreter's list now (the thread ended,
      // or its tid cannot be told: python_process.h). Marked, not left
      // bare (issue 31: a bare loop frame would pass for a sample nobody
      // tried to read).
      ++reads_.read_late;
      ++reads_.no_thread_state;
      mark(kNoStateAddress, frames);
      return;
    }
    if (at_sample_ != nullptr && given_.insert(tid).second) give_threads();
    walk_late(tid, time, state, &walk);
    ++reads_.read_late;
  }
  // An empty walk is merged too: a sample in the loop had Python frames,
  // so none read after the fact (or a chain that could not be read) is a
  // stack that moved: between init_import_site's last frame and the main
  // module's first, the interpreter compiles the script in C, and a round
  // of startup samples read then (the first round comes up to 100 ms
  // after the exec: perf_source.cc) had all been left bare. Read at the
  // sample, an empty walk under one loop call is that call entering its
  // first frame (python_merge.h).
  std::vector<uint64_t>& python = python_;
  python.resize(walk.count);
  names_.name(namer_, raw_.data(), walk.count, time, kUnnamedAddress, python.data());
  if (walk.count != 0) ++reads_.merged;
  merged_frames_.resize(frames->size() + walk.count + 1);
  // Read at the sample, one loop call more than the walk's entries is the
  // innermost call being entered or left (python_merge.h): 5 % of the
  // samples of a program whose calls last a microsecond
  // (tests/python_progs/moving.py on 2.7). Read after the fact, the same
  // shape is as likely a stack that moved.
  const interp::MergeResult result = interp::merge_python_frames(
      frames->data(), static_cast<uint32_t>(frames->size()), raw_.data(), python.data(), walk,
      interp::EvalLoop{target_.eval_loop_start, target_.eval_loop_end}, kMisfitAddress, merged_frames_.data(),
      static_cast<uint32_t>(merged_frames_.size()), at_sample, kEnteringAddress, native_truncated);
  // A stack that does not fit is not the one the sample was taken in (it
  // moved on before the reader got to it): the merge marks it instead.
  if (!result.fits) ++(at_sample ? reads_.misfits_at_sample : reads_.misfits_late);
  merged_frames_.resize(result.count);
  frames->swap(merged_frames_);
}

// The program reads this thread's later samples itself, and those of every
// thread the interpreter has now (the lookup read them all). Once a
// thread: its samples already in the rings are read after the fact too,
// and the list read again for each cost 3-4 process_vm_readv calls a
// sample (issue 31's cost).
void PythonFrames::give_threads() {
  for (const auto& [thread, thread_state] : threads_.all())
    if (thread != 0) {
      at_sample_->add_thread(thread, thread_state);
      given_.insert(thread);
    }
}

void PythonFrames::walk_late(pid_t tid, uint64_t time, uint64_t state, interp::WalkResult* walk) {
  LateRead& late = late_[tid];
  if (time < late.began_ns) {
    raw_.assign(late.raw.begin(), late.raw.end());
    *walk = late.walk;
    gil_state_ = late.gil;
    return;
  }
  late.began_ns = monotonic_ns();
  ++reads_.walks_late;
  if (!gil_.known()) find_gil();
  // The pages the thread's last walk read, in one call (see the header).
  interp::PrefetchedMemory::Range ranges[std::size(late.pages)];
  for (size_t i = 0; i < late.page_count; ++i) ranges[i] = {late.pages[i], interp::PageCachedMemory::kPage};
  ahead_.fetch(ranges, late.page_count);
  gil_state_ = interp::python_gil_state(gil_, cached_, state);
  raw_.resize(kMaxPythonDepth);
  *walk = walk_python_frames(target_.layout, cached_, state, raw_.data(), kMaxPythonDepth);
  raw_.resize(walk->count);
  late.raw.assign(raw_.begin(), raw_.end());
  late.walk = *walk;
  late.gil = gil_state_;
  // Before the code objects are named (rare: python's namer reads them
  // once per address per 100 ms), so that the next fetch is the walk's.
  uint64_t read[interp::PageCachedMemory::kPages];
  const size_t n = cached_.pages(read, std::size(read));
  late.page_count = 0;
  for (size_t i = 0; i < n && late.page_count < std::size(late.pages); ++i)
    if (read[i] != 0 && read[i] % interp::PageCachedMemory::kPage == 0) late.pages[late.page_count++] = read[i];
}

void PythonFrames::mark(uint64_t address, std::vector<uint64_t>* frames) {
  merged_frames_.resize(frames->size() + 1);
  const interp::MergeResult result = interp::merge_python_frames(
      frames->data(), static_cast<uint32_t>(frames->size()), nullptr, nullptr,
      interp::WalkResult{0, interp::WalkStatus::kReadError},
      interp::EvalLoop{target_.eval_loop_start, target_.eval_loop_end}, address, merged_frames_.data(),
      static_cast<uint32_t>(merged_frames_.size()));
  merged_frames_.resize(result.count);
  frames->swap(merged_frames_);
}

void PythonFrames::name_frames(std::map<uint64_t, std::vector<format::Frame>>* frames) const {
  names_.name_frames(frames);
}

}  // namespace profiling::outside
