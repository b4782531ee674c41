#include "report/stacks.h"

#include <algorithm>
#include <unordered_map>

#include "report/report.h"

namespace profiling::report {

std::string frame_label(const StackFrame& frame) {
  return frame.inlined ? frame.function + " (inline)" : frame.function;
}

// Interns frames and stacks while a set is built or filtered.
class StackSetBuilder {
 public:
  explicit StackSetBuilder(StackSet* set) : set_(set) {}

  FrameId frame(StackFrame frame) {
    std::string key = frame.function;
    for (const std::string* part : {&frame.raw_function, &frame.object, &frame.file}) {
      key += '\0';
      key += *part;
    }
    key += '\0' + std::to_string(frame.line) + (frame.inlined ? "i" : "");
    if (frame.task) key += '\0' + std::to_string(frame.tid) + ':' + std::to_string(frame.pid);
    auto [it, inserted] = frame_ids_.try_emplace(std::move(key), static_cast<FrameId>(set_->frames_.size()));
    if (inserted) set_->frames_.push_back(std::move(frame));
    return it->second;
  }
  // A frame already in the set (filtering keeps the same frame ids).
  void adopt_frames(const std::vector<StackFrame>& frames) { set_->frames_ = frames; }

  // The stack's index in the set; SIZE_MAX when nothing was added.
  size_t add(const std::vector<FrameId>& frames, uint64_t count, uint64_t observations, bool truncated) {
    if (count == 0 || frames.empty()) return SIZE_MAX;
    // Indexed by hash, the frames compared in place: the index holds no
    // copy of a stack (deep stacks are most of what a report holds).
    size_t h = 1469598103934665603ull;
    for (FrameId id : frames) h = (h ^ id) * 1099511628211ull;
    size_t at = SIZE_MAX;
    for (auto [it, end] = stack_ids_.equal_range(h); it != end && at == SIZE_MAX; ++it)
      if (set_->stacks_[it->second].frames == frames) at = it->second;
    if (at == SIZE_MAX) {
      at = set_->stacks_.size();
      stack_ids_.emplace(h, static_cast<uint32_t>(at));
      set_->stacks_.push_back(Stack{frames, 0, 0, truncated});
    }
    set_->saturated_ |= format::saturating_add(set_->stacks_[at].count, count);
    format::saturating_add(set_->stacks_[at].observations, observations);
    set_->saturated_ |= format::saturating_add(set_->kept_, count);
    return at;
  }

 private:
  StackSet* set_;
  std::unordered_map<std::string, FrameId> frame_ids_;
  std::unordered_multimap<size_t, uint32_t> stack_ids_;  // hash of the frames -> stack
};

StackBuilder::StackBuilder(const format::Profile& profile, FrameSymbolizer& symbolizer, const StackOptions& options,
                           const format::StackTable* chains)
    : profile_(profile),
      table_(chains != nullptr ? *chains : profile.stacks),
      symbolizer_(symbolizer),
      options_(options),
      interner_(std::make_unique<StackSetBuilder>(&set_)),
      chains_(table_.size() + 1),
      chain_done_(table_.size() + 1, false),
      program_(profile.program.substr(profile.program.rfind('/') + 1)) {
  StackFrame truncated_frame;
  truncated_frame.function = truncated_frame.raw_function = format::kTruncatedFrame;
  truncated_ = interner_->frame(truncated_frame);
  // Mappings sorted by start: one binary search per address.
  for (const format::Mapping& m : profile.mappings) mappings_.push_back(&m);
  std::sort(mappings_.begin(), mappings_.end(),
            [](const format::Mapping* a, const format::Mapping* b) { return a->start < b->start; });
}

StackBuilder::~StackBuilder() = default;

void StackBuilder::frames_at(uint64_t address, std::vector<FrameId>* out) {
  auto it = std::upper_bound(mappings_.begin(), mappings_.end(), address,
                             [](uint64_t a, const format::Mapping* m) { return a < m->start; });
  const format::Mapping* mapping = it != mappings_.begin() && (*(it - 1))->contains(address) ? *(it - 1) : nullptr;
  if (!mapping) mapping = profile_.mapping_for(address);  // overlapping mappings
  std::vector<StackFrame> frames = symbolizer_.frames_at(mapping, address, profile_.frames_for(address),
                                                         options_.lines, options_.inline_frames);
  if (!options_.inline_frames) frames.erase(frames.begin(), frames.end() - 1);
  out->clear();
  for (StackFrame& f : frames) out->push_back(interner_->frame(std::move(f)));
}

const std::vector<FrameId>& StackBuilder::chain(uint32_t id) {
  if (id >= chains_.size()) id = format::StackTable::kNoCallers;
  if (chain_done_[id]) return chains_[id];
  chain_done_[id] = true;
  std::vector<FrameId>& out = chains_[id];
  if (table_.truncated(id)) out.push_back(truncated_);
  if (id == format::StackTable::kNoCallers) return out;
  const auto callers = table_.callers(id);
  for (auto caller = callers.rbegin(); caller != callers.rend(); ++caller) {
    auto [it, inserted] = caller_frames_.try_emplace(*caller);
    if (inserted) frames_at(*caller, &it->second);
    out.insert(out.end(), it->second.rbegin(), it->second.rend());
  }
  return out;
}

FrameId StackBuilder::root_of(const format::Sample& sample) {
  const auto pid = sample.pid != 0 ? sample.pid : static_cast<int32_t>(profile_.pid);
  const int32_t tid = options_.roots == StackRoots::thread ? sample.tid : 0;
  auto [it, inserted] = roots_.try_emplace({pid, tid}, 0);
  if (!inserted) return it->second;
  StackFrame root;
  root.task = true;
  root.pid = pid;
  root.tid = tid;
  auto name = [&](int32_t id) {
    auto named = profile_.thread_names.find(id);
    return named != profile_.thread_names.end() ? named->second : std::string();
  };
  if (options_.roots == StackRoots::thread) {
    root.raw_function = name(tid);
    root.function = thread_label(root.raw_function, tid);
    root.object = kThreadObject;
  } else {
    // Its main thread's name (the comm, which exec sets), else the
    // profile's program.
    root.raw_function = name(pid);
    if (root.raw_function.empty() && pid == profile_.pid && profile_.programs.empty()) root.raw_function = program_;
    root.function = process_label(root.raw_function, pid);
    root.object = kProcessObject;
  }
  it->second = interner_->frame(std::move(root));
  return it->second;
}

size_t StackBuilder::add(const format::Sample& sample) {
  set_.saturated_ |= format::saturating_add(set_.total_, sample.count);
  const uint64_t observations = profile_.has_observations ? sample.observations : 0;
  format::saturating_add(set_.total_observations_, observations);
  if (sample.count == 0) return SIZE_MAX;
  if (!have_leaf_ || sample.address != leaf_address_) {
    frames_at(sample.address, &leaf_);
    have_leaf_ = true;
    leaf_address_ = sample.address;
  }
  const std::vector<FrameId>& callers = chain(sample.stack);
  stack_.clear();
  if (options_.roots != StackRoots::none) stack_.push_back(root_of(sample));
  stack_.insert(stack_.end(), callers.begin(), callers.end());
  stack_.insert(stack_.end(), leaf_.rbegin(), leaf_.rend());
  return interner_->add(stack_, sample.count, observations, table_.truncated(sample.stack));
}

StackSet StackBuilder::take() { return std::move(set_); }

StackSet build_stacks(const format::Profile& profile, FrameSymbolizer& symbolizer, const StackOptions& options) {
  StackBuilder builder(profile, symbolizer, options);
  for (const format::Sample& sample : profile.samples) builder.add(sample);
  return builder.take();
}

StackSet filter_stacks(const StackSet& set, const StackFilter& filter) {
  StackSet out;
  out.total_ = set.total_;
  out.total_observations_ = set.total_observations_;
  out.saturated_ = set.saturated_;
  StackSetBuilder builder(&out);
  builder.adopt_frames(set.frames_);
  auto matches = [&](const FocusPattern* pattern) {
    std::vector<bool> hit(set.frames_.size(), false);
    if (!pattern) return hit;
    for (size_t i = 0; i < set.frames_.size(); ++i)
      hit[i] = pattern->found_in(filter.match_objects ? set.frames_[i].object : set.frames_[i].function);
    return hit;
  };
  const std::vector<bool> focus = matches(filter.focus), ignore = matches(filter.ignore), hide = matches(filter.hide);
  std::vector<FrameId> frames;
  for (const Stack& stack : set.stacks_) {
    frames.clear();
    for (FrameId id : stack.frames)
      if (!hide[id]) frames.push_back(id);
    auto any = [&](const std::vector<bool>& hit) {
      return std::any_of(frames.begin(), frames.end(), [&](FrameId id) { return hit[id]; });
    };
    if (filter.ignore && any(ignore)) continue;
    if (filter.focus && !any(focus)) continue;
    builder.add(frames, stack.count, stack.observations,
                stack.truncated && !frames.empty() && frames[0] == stack.frames[0]);
  }
  return out;
}

std::vector<uint64_t> StackSet::self_by_frame(uint64_t Stack::*field) const {
  std::vector<uint64_t> self(frames_.size(), 0);
  for (const Stack& s : stacks_) format::saturating_add(self[s.frames.back()], s.*field);
  return self;
}

std::vector<uint64_t> StackSet::cumulative_by_frame(uint64_t Stack::*field) const {
  std::vector<uint64_t> cumulative(frames_.size(), 0);
  // A frame met again in the same stack (recursion) counts once: the
  // stack's index marks the frames already counted.
  std::vector<size_t> seen(frames_.size(), SIZE_MAX);
  for (size_t i = 0; i < stacks_.size(); ++i)
    for (FrameId id : stacks_[i].frames)
      if (seen[id] != i) {
        seen[id] = i;
        format::saturating_add(cumulative[id], stacks_[i].*field);
      }
  return cumulative;
}

}  // namespace profiling::report
