#include "outside/python_frames.h"

#include <algorithm>
#include <string_view>

#include "interp/python_merge.h"
#include "interp/python_walk.h"

namespace profiling::outside {

namespace {
// Frames read per sample at most: deeper Python stacks keep their innermost
// frames (the walk says kTruncated and the native stack's outer eval-loop
// frames then have none: counted as a misfit).
constexpr uint32_t kMaxPythonDepth = 256;
}  // namespace

PythonFrames::PythonFrames(const interp::PythonTarget& target)
    : target_(target),
      memory_(target.pid),
      threads_(target_, memory_),
      namer_(target_.layout, cached_, target_.code_type) {
  names_.push_back(format::Frame{kMisfitFrame, kMisfitFrame, "", 0});  // kMisfitAddress
}

std::unique_ptr<PythonFrames> PythonFrames::open(pid_t pid, std::string* why) {
  auto target = interp::find_python(pid, why);
  if (!target) return nullptr;
  if (target->eval_loop_start == 0) {
    *why = target->image + ": no symbol of its evaluation loop (_PyEval_EvalFrameDefault, PyEval_EvalFrameEx)";
    return nullptr;
  }
  return std::unique_ptr<PythonFrames>(new PythonFrames(*target));
}

std::unique_ptr<PythonFrames> PythonFrames::open_if_python(pid_t pid, const std::vector<MappedCode>& code) {
  const bool maps_python = std::any_of(code.begin(), code.end(), [](const MappedCode& m) {
    const std::string_view base = std::string_view(m.path).substr(m.path.rfind('/') + 1);
    return base.starts_with("python") || base.starts_with("libpython");
  });
  std::string why;
  return maps_python ? open(pid, &why) : nullptr;
}

void PythonFrames::merge(pid_t tid, uint64_t* leaf, std::vector<uint64_t>* callers) {
  callers->insert(callers->begin(), *leaf);
  merge(tid, callers);
  *leaf = callers->front();
  callers->erase(callers->begin());
}

uint64_t PythonFrames::address_of(uint32_t code, int line) {
  const auto [it, added] = addresses_.try_emplace({code, line}, 0);
  if (!added) return it->second;
  const interp::PythonCode& c = namer_.code(code);
  it->second = format::kInterpreterFrameBase + names_.size();
  names_.push_back(format::Frame{c.name, c.name, c.file, line > 0 ? line : c.first_line});
  return it->second;
}

void PythonFrames::merge(pid_t tid, std::vector<uint64_t>* frames) {
  bool has_eval_loop = false;
  for (const uint64_t address : *frames) has_eval_loop = has_eval_loop || in_eval_loop(address);
  // A thread outside the loop (a native thread, the interpreter starting
  // or ending) has no Python frames to place.
  if (!has_eval_loop) return;
  const uint64_t state = threads_.thread_state(tid);
  if (state == 0) return;
  raw_.resize(kMaxPythonDepth);
  cached_.forget();  // the memory moved on since the last sample
  const interp::WalkResult walk = walk_python_frames(target_.layout, cached_, state, raw_.data(), kMaxPythonDepth);
  if (walk.count == 0) return;
  // Name each frame now: an address reused later by another code object
  // gets another id (python_code.h's rule), so this sample keeps its names.
  std::vector<uint64_t>& python = python_;
  python.resize(walk.count);
  for (uint32_t i = 0; i < walk.count; ++i) {
    const uint32_t id = namer_.identify(raw_[i].code);
    python[i] = id == interp::PythonCodeNamer::kNoCode
                    ? 0
                    : address_of(id, namer_.line(namer_.code(id), raw_[i].instruction));
  }
  ++merged_;
  merged_frames_.resize(frames->size() + walk.count + 1);
  const interp::MergeResult result = interp::merge_python_frames(
      frames->data(), static_cast<uint32_t>(frames->size()), raw_.data(), python.data(), walk,
      interp::EvalLoop{target_.eval_loop_start, target_.eval_loop_end}, kMisfitAddress, merged_frames_.data(),
      static_cast<uint32_t>(merged_frames_.size()));
  // A stack that does not fit is not the one the sample was taken in (it
  // moved on before the reader got to it): the merge marks it instead.
  if (!result.fits) ++misfits_;
  merged_frames_.resize(result.count);
  frames->swap(merged_frames_);
}

void PythonFrames::name_frames(std::map<uint64_t, std::vector<format::Frame>>* frames) const {
  for (size_t i = 0; i < names_.size(); ++i) (*frames)[format::kInterpreterFrameBase + i] = {names_[i]};
}

}  // namespace profiling::outside
