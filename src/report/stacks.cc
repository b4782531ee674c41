#include "report/stacks.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "report/report.h"

namespace profiling::report {

std::string drop_symbol_version(std::string_view name) {
  // ELF symbol versioning (GNU "name@VERSION", default "name@@VERSION"):
  // the version says which ABI the symbol belongs to, not what ran, and
  // splits one function into two names across binaries.
  const size_t at = name.find('@');
  if (at == 0 || at == std::string_view::npos) return std::string(name);
  const std::string_view version = name.substr(name[at + 1] == '@' ? at + 2 : at + 1);
  if (version.empty() || version.find_first_of(" ()<>,:") != std::string_view::npos) return std::string(name);
  return std::string(name.substr(0, at));
}

std::string thread_label(const std::string& name, int32_t tid) {
  if (tid == 0) return "[unknown thread]";
  return (name.empty() ? std::string("thread") : name) + " " + std::to_string(tid);
}

std::string process_label(const std::string& name, int64_t pid) {
  if (pid == 0) return "[unknown process]";
  return (name.empty() ? std::string("process") : name) + " " + std::to_string(pid);
}

std::string frame_label(const StackFrame& frame) {
  return frame.inlined ? frame.function + " (inline)" : frame.function;
}

namespace {

size_t code_points(std::string_view text) {
  size_t n = 0;
  for (unsigned char c : text)
    if ((c & 0xc0) != 0x80) ++n;
  return n;
}

// Template arguments and parameter lists out of a demangled C++ name, as
// pprof's ShortenFunctionName: what is left names the function. An
// operator's own characters ("operator<<", "operator()") and
// "(anonymous namespace)" are kept.
std::string elide_arguments(const std::string& name) {
  std::string out;
  int depth = 0;
  for (size_t i = 0; i < name.size(); ++i) {
    if (depth == 0 && name.compare(i, 8, "operator") == 0) {
      size_t end = i + 8;
      if (name.compare(end, 2, "()") == 0 || name.compare(end, 2, "[]") == 0) {
        end += 2;
      } else {
        while (end < name.size() && std::string_view("<>=+-*/%&|^!~,").find(name[end]) != std::string_view::npos)
          ++end;
      }
      out.append(name, i, end - i);
      i = end - 1;
      continue;
    }
    if (depth == 0 && name.compare(i, 21, "(anonymous namespace)") == 0) {
      out += "(anonymous namespace)";
      i += 20;
      continue;
    }
    const char c = name[i];
    if (c == '<' || c == '(') {
      ++depth;
    } else if ((c == '>' || c == ')') && depth > 0) {
      --depth;
    } else if (depth == 0) {
      out += c;
    }
  }
  // "f(int) const" leaves "f const"; the qualifier alone says nothing.
  for (std::string_view tail : {" const", " volatile", " &&", " &"})
    if (out.size() > tail.size() && out.compare(out.size() - tail.size(), tail.size(), tail) == 0)
      out.resize(out.size() - tail.size());
  return out.empty() ? name : out;
}

}  // namespace

std::string shorten_name(const std::string& name, size_t width) {
  if (code_points(name) <= width) return name;
  std::string shorter = elide_arguments(name);
  if (code_points(shorter) <= width || width < 2) return shorter;
  // The end names the function; the start (namespaces) gives way.
  size_t keep = width - 1, start = shorter.size();
  while (start > 0 && keep > 0) {
    --start;
    if ((static_cast<unsigned char>(shorter[start]) & 0xc0) != 0x80) --keep;
  }
  return "…" + shorter.substr(start);
}

std::vector<StackFrame> ElfFrameSymbolizer::frames_at(const format::Mapping* mapping, uint64_t address,
                                                      const std::vector<format::Frame>* carried, bool lines,
                                                      bool inlines) {
  const Symbol symbol = symbolizer_.symbolize(mapping, address, carried);
  std::vector<StackFrame> out;
  auto add = [&](const std::string& name, std::string file, int line, bool inlined) {
    StackFrame frame;
    frame.raw_function = name.empty() ? kUnknownFunction : name;
    frame.function = drop_symbol_version(frame.raw_function);
    frame.object = symbol.object;
    if (lines) {
      frame.file = std::move(file);
      frame.line = line;
    }
    frame.inlined = inlined;
    out.push_back(std::move(frame));
  };
  if (symbol.known && !inlines && !lines) {
    // The symbol table's name is the whole answer: no DWARF is read.
    add(symbol.function, {}, 0, false);
  } else if (symbol.known) {
    const std::vector<format::Frame> frames = symbolizer_.frames(mapping, symbol, lines);
    for (size_t i = 0; i < frames.size(); ++i)
      add(frames[i].function, frames[i].file, static_cast<int>(frames[i].line), i + 1 < frames.size());
  } else if (symbol.from_profile && carried) {
    // The file's own frames (pprof Line entries: innermost first, the
    // inlined ones before the function they were inlined into).
    for (const format::Frame& f : *carried) {
      const std::string& name = f.function.empty() ? f.system_name : f.function;
      if (name.empty() && f.file.empty()) continue;
      add(name.empty() ? std::string(kUnknownFunction) : demangle(name), f.file, static_cast<int>(f.line), true);
    }
    if (!out.empty()) out.back().inlined = false;
  }
  if (out.empty()) add(symbol.function, symbol.profile_line.file, symbol.profile_line.line, false);
  return out;
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

  void add(const std::vector<FrameId>& frames, uint64_t count, uint64_t observations, bool truncated) {
    if (count == 0 || frames.empty()) return;
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
  }

 private:
  StackSet* set_;
  std::unordered_map<std::string, FrameId> frame_ids_;
  std::unordered_multimap<size_t, uint32_t> stack_ids_;  // hash of the frames -> stack
};

StackSet build_stacks(const format::Profile& profile, FrameSymbolizer& symbolizer, const StackOptions& options) {
  StackSet set;
  StackSetBuilder builder(&set);
  StackFrame truncated_frame;
  truncated_frame.function = truncated_frame.raw_function = format::kTruncatedFrame;
  const FrameId truncated = builder.frame(truncated_frame);

  // Mappings sorted by start: one binary search per address.
  std::vector<const format::Mapping*> mappings;
  for (const format::Mapping& m : profile.mappings) mappings.push_back(&m);
  std::sort(mappings.begin(), mappings.end(),
            [](const format::Mapping* a, const format::Mapping* b) { return a->start < b->start; });
  // The frames at one address, innermost first, as ids.
  std::vector<FrameId> scratch;
  auto frames_at = [&](uint64_t address, std::vector<FrameId>* out) {
    auto it = std::upper_bound(mappings.begin(), mappings.end(), address,
                               [](uint64_t a, const format::Mapping* m) { return a < m->start; });
    const format::Mapping* mapping = it != mappings.begin() && (*(it - 1))->contains(address) ? *(it - 1) : nullptr;
    if (!mapping) mapping = profile.mapping_for(address);  // overlapping mappings
    std::vector<StackFrame> frames = symbolizer.frames_at(mapping, address, profile.frames_for(address), options.lines,
                                                           options.inline_frames);
    if (!options.inline_frames) frames.erase(frames.begin(), frames.end() - 1);
    out->clear();
    for (StackFrame& f : frames) out->push_back(builder.frame(std::move(f)));
  };
  // Callers are shared by many samples: each caller address is named once
  // and each chain once (root first). Leaves are not kept by address: a
  // gmon.out has millions of them, in address order, named one after the
  // other.
  std::unordered_map<uint64_t, std::vector<FrameId>> caller_frames;
  std::vector<std::vector<FrameId>> chains(profile.stacks.size() + 1);
  std::vector<bool> chain_done(profile.stacks.size() + 1, false);
  auto chain = [&](uint32_t id) -> const std::vector<FrameId>& {
    if (id >= chains.size()) id = format::StackTable::kNoCallers;
    if (chain_done[id]) return chains[id];
    chain_done[id] = true;
    std::vector<FrameId>& out = chains[id];
    if (profile.stacks.truncated(id)) out.push_back(truncated);
    if (id == format::StackTable::kNoCallers) return out;
    const auto callers = profile.stacks.callers(id);
    for (auto caller = callers.rbegin(); caller != callers.rend(); ++caller) {
      auto [it, inserted] = caller_frames.try_emplace(*caller);
      if (inserted) frames_at(*caller, &it->second);
      out.insert(out.end(), it->second.rbegin(), it->second.rend());
    }
    return out;
  };
  // Thread or process roots, each named once: (pid, tid) -> frame.
  std::map<std::pair<int32_t, int32_t>, FrameId> roots;
  const std::string program = profile.program.substr(profile.program.rfind('/') + 1);
  auto root_of = [&](const format::Sample& sample) {
    const auto pid = sample.pid != 0 ? sample.pid : static_cast<int32_t>(profile.pid);
    const int32_t tid = options.roots == StackRoots::thread ? sample.tid : 0;
    auto [it, inserted] = roots.try_emplace({pid, tid}, 0);
    if (inserted) {
      StackFrame root;
      root.task = true;
      root.pid = pid;
      root.tid = tid;
      auto name = [&](int32_t id) {
        auto named = profile.thread_names.find(id);
        return named != profile.thread_names.end() ? named->second : std::string();
      };
      if (options.roots == StackRoots::thread) {
        root.raw_function = name(tid);
        root.function = thread_label(root.raw_function, tid);
        root.object = kThreadObject;
      } else {
        // Its main thread's name (the comm, which exec sets), else the
        // profile's program.
        root.raw_function = name(pid);
        if (root.raw_function.empty() && pid == profile.pid && profile.programs.empty()) root.raw_function = program;
        root.function = process_label(root.raw_function, pid);
        root.object = kProcessObject;
      }
      it->second = builder.frame(std::move(root));
    }
    return it->second;
  };
  std::vector<FrameId> leaf, stack;
  bool have_leaf = false;
  uint64_t leaf_address = 0;
  for (const format::Sample& sample : profile.samples) {
    set.saturated_ |= format::saturating_add(set.total_, sample.count);
    const uint64_t observations = profile.has_observations ? sample.observations : 0;
    format::saturating_add(set.total_observations_, observations);
    if (sample.count == 0) continue;
    if (!have_leaf || sample.address != leaf_address) {
      frames_at(sample.address, &leaf);
      have_leaf = true;
      leaf_address = sample.address;
    }
    const std::vector<FrameId>& callers = chain(sample.stack);
    stack.clear();
    if (options.roots != StackRoots::none) stack.push_back(root_of(sample));
    stack.insert(stack.end(), callers.begin(), callers.end());
    stack.insert(stack.end(), leaf.rbegin(), leaf.rend());
    builder.add(stack, sample.count, observations, profile.stacks.truncated(sample.stack));
  }
  return set;
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

std::vector<CallRelations> call_relations(const StackSet& set, const FocusPattern& pattern) {
  // Frames of one function and object are one function, inlined or not
  // and whatever their lines.
  const std::vector<StackFrame>& frames = set.frames();
  std::map<std::pair<std::string, std::string>, uint32_t> function_ids;
  std::vector<uint32_t> function_of(frames.size());
  std::vector<const StackFrame*> function_frame;
  for (size_t i = 0; i < frames.size(); ++i) {
    auto [it, inserted] = function_ids.try_emplace({frames[i].function, frames[i].object}, function_frame.size());
    if (inserted) function_frame.push_back(&frames[i]);
    function_of[i] = it->second;
  }
  std::vector<int> relation_of(function_frame.size(), -1);
  std::vector<CallRelations> out;
  for (size_t f = 0; f < function_frame.size(); ++f)
    if (function_frame[f]->function != format::kTruncatedFrame && !function_frame[f]->task &&
        pattern.found_in(function_frame[f]->function)) {
      relation_of[f] = static_cast<int>(out.size());
      out.push_back(CallRelations{function_frame[f]->function, function_frame[f]->object, 0, 0, {}, {}});
    }
  // Edges: (relation, other function, inlined, callee side) -> samples.
  std::map<std::tuple<int, uint32_t, bool, bool>, uint64_t> edges;
  std::set<std::tuple<int, uint32_t, bool, bool>> in_stack;
  std::set<int> through;
  for (const Stack& stack : set.stacks()) {
    in_stack.clear();
    through.clear();
    const size_t depth = stack.frames.size();
    for (size_t i = 0; i < depth; ++i) {
      const int r = relation_of[function_of[stack.frames[i]]];
      if (r < 0) continue;
      through.insert(r);
      if (i + 1 == depth) format::saturating_add(out[r].self, stack.count);
      if (i > 0) in_stack.emplace(r, function_of[stack.frames[i - 1]], frames[stack.frames[i]].inlined, false);
      if (i + 1 < depth) in_stack.emplace(r, function_of[stack.frames[i + 1]], frames[stack.frames[i + 1]].inlined, true);
    }
    for (int r : through) format::saturating_add(out[r].cumulative, stack.count);
    for (const auto& edge : in_stack) format::saturating_add(edges[edge], stack.count);
  }
  for (const auto& [edge, samples] : edges) {
    const auto& [r, other, inlined, callee] = edge;
    CallRelations& relation = out[r];
    CallEdge e{function_frame[other]->function, function_frame[other]->object, inlined, samples,
               relation.cumulative ? 100.0 * static_cast<double>(samples) / static_cast<double>(relation.cumulative) : 0};
    (callee ? relation.callees : relation.callers).push_back(std::move(e));
  }
  auto hottest = [](const CallEdge& a, const CallEdge& b) {
    return a.samples != b.samples ? a.samples > b.samples : a.function < b.function;
  };
  for (CallRelations& relation : out) {
    std::stable_sort(relation.callers.begin(), relation.callers.end(), hottest);
    std::stable_sort(relation.callees.begin(), relation.callees.end(), hottest);
  }
  std::erase_if(out, [](const CallRelations& r) { return r.cumulative == 0; });
  std::stable_sort(out.begin(), out.end(),
                   [](const CallRelations& a, const CallRelations& b) { return a.cumulative > b.cumulative; });
  return out;
}

}  // namespace profiling::report
