#include "report/interpreter_view.h"

#include <algorithm>
#include <vector>

namespace profiling::report {

std::optional<InterpreterView> parse_interpreter_view(std::string_view name) {
  if (name == "merged") return InterpreterView::merged;
  // The program's own frames alone, whichever runtime's (issue 34).
  if (name == "python" || name == "ruby") return InterpreterView::python;
  if (name == "native") return InterpreterView::native;
  return std::nullopt;
}

namespace {

// chain: a sample's frames, innermost first; keeps the view's.
void filter_chain(std::vector<uint64_t>* chain, InterpreterView view) {
  std::vector<uint64_t> kept;
  kept.reserve(chain->size());
  const auto interpreted = [](uint64_t address) { return format::is_interpreter_frame(address); };
  switch (view) {
    case InterpreterView::native:
      std::copy_if(chain->begin(), chain->end(), std::back_inserter(kept), [&](uint64_t a) { return !interpreted(a); });
      break;
    case InterpreterView::python:
      if (std::none_of(chain->begin(), chain->end(), interpreted)) return;
      std::copy_if(chain->begin(), chain->end(), std::back_inserter(kept), interpreted);
      break;
    case InterpreterView::merged:
      // The evaluation loop's frame sits just outside the frames it ran.
      for (size_t i = 0; i < chain->size(); ++i)
        if (interpreted((*chain)[i]) || i == 0 || !interpreted((*chain)[i - 1])) kept.push_back((*chain)[i]);
      break;
  }
  if (!kept.empty()) chain->swap(kept);
}

}  // namespace

void apply_interpreter_view(format::Profile* profile, InterpreterView view) {
  const auto has_interpreted = [&](const format::Sample& s) {
    if (format::is_interpreter_frame(s.address)) return true;
    const auto callers = profile->stacks.callers(s.stack);
    return std::any_of(callers.begin(), callers.end(), format::is_interpreter_frame);
  };
  if (std::none_of(profile->samples.begin(), profile->samples.end(), has_interpreted)) return;
  format::StackTable stacks;
  std::vector<uint64_t> chain;
  for (format::Sample& s : profile->samples) {
    const auto callers = profile->stacks.callers(s.stack);
    const bool truncated = profile->stacks.truncated(s.stack);
    chain.assign(1, s.address);
    chain.insert(chain.end(), callers.begin(), callers.end());
    filter_chain(&chain, view);
    s.address = chain.front();
    s.stack = stacks.intern(std::span<const uint64_t>(chain).subspan(1), truncated);
  }
  profile->stacks = std::move(stacks);
  // The timeline's samples read the same frames (issue 33).
  format::StackTable timeline_stacks;
  for (format::TimedSample& t : profile->timeline.samples) {
    const auto callers = profile->timeline.stacks.callers(t.stack);
    chain.assign(1, t.address);
    chain.insert(chain.end(), callers.begin(), callers.end());
    filter_chain(&chain, view);
    t.address = chain.front();
    t.stack = timeline_stacks.intern(std::span<const uint64_t>(chain).subspan(1), profile->timeline.stacks.truncated(t.stack));
  }
  profile->timeline.stacks = std::move(timeline_stacks);
  format::coalesce_samples(&profile->samples);
  format::canonicalize_stacks(profile);
}

}  // namespace profiling::report
