#include "report/model.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "report/report.h"

namespace profiling::report {

std::vector<StackFrame> ElfFrameSymbolizer::frames_at(const format::Mapping* mapping, uint64_t address,
                                                      const std::vector<format::Frame>* carried, bool lines,
                                                      bool inlines) {
  // The leaf the leaf pass named last is not named again; a caller is
  // named here once (StackBuilder keeps each caller's frames).
  const bool leaf = have_leaf_ && address == leaf_address_;
  Symbol named;
  if (!leaf) named = symbolizer_.symbolize(mapping, address, carried);
  const Symbol& symbol = leaf ? leaf_ : named;
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

const Symbol& ElfFrameSymbolizer::leaf_symbol(const format::Mapping* mapping, uint64_t address,
                                              const std::vector<format::Frame>* carried) {
  leaf_ = symbolizer_.symbolize(mapping, address, carried);
  have_leaf_ = true;
  leaf_address_ = address;
  return leaf_;
}

namespace {

bool same_symbol(const Symbol& a, const Symbol& b) {
  return a.known == b.known && a.from_profile == b.from_profile && a.function_address == b.function_address &&
         a.function == b.function && a.object == b.object;
}

// Mappings sorted by start: one binary search per address instead of
// Profile::mapping_for's linear scan (thousands of libraries).
std::vector<const format::Mapping*> mappings_by_start(const format::Profile& profile) {
  std::vector<const format::Mapping*> mappings;
  for (const format::Mapping& m : profile.mappings) mappings.push_back(&m);
  std::sort(mappings.begin(), mappings.end(),
            [](const format::Mapping* a, const format::Mapping* b) { return a->start < b->start; });
  return mappings;
}

const format::Mapping* mapping_of(const format::Profile& profile, const std::vector<const format::Mapping*>& mappings,
                                  uint64_t address) {
  auto it = std::upper_bound(mappings.begin(), mappings.end(), address,
                             [](uint64_t a, const format::Mapping* m) { return a < m->start; });
  if (it != mappings.begin() && (*(it - 1))->contains(address)) return *(it - 1);
  return profile.mapping_for(address);  // overlapping mappings
}

bool sorted_by_address(const std::vector<format::Sample>& samples) {
  for (size_t i = 1; i < samples.size(); ++i)
    if (samples[i - 1].address > samples[i].address) return false;
  return true;
}

}  // namespace

LeafPass::LeafPass(const format::Profile& profile, ElfFrameSymbolizer& frames, const LeafOptions& options)
    : frames_(frames), options_(options), mappings_(mappings_by_start(profile)) {
  out_.profile = &profile;
}

void LeafPass::add(const format::Sample& sample) {
  const format::Profile& profile = *out_.profile;
  if (sample.count == 0) return;
  const uint64_t observations = profile.has_observations ? sample.observations : 0;
  format::saturating_add(out_.total_observations, observations);
  if (have_previous_ && sample.address == previous_address_) {
    out_.saturated |= format::saturating_add(out_.total, sample.count);
    out_.saturated |= format::saturating_add(out_.samples.back().count, sample.count);
    format::saturating_add(out_.samples.back().observations, observations);
    return;
  }
  have_previous_ = true;
  previous_address_ = sample.address;
  SymbolizedSample s;
  s.address = sample.address;
  s.count = sample.count;
  s.observations = observations;
  s.mapping = mapping_of(profile, mappings_, s.address);
  s.symbol = frames_.leaf_symbol(s.mapping, s.address, profile.frames_for(s.address));
  if (options_.lines) s.line = frames_.symbolizer().source_line(s.mapping, s.symbol);
  out_.saturated |= format::saturating_add(out_.total, s.count);
  // Neighbouring addresses of one function (and line) are one entry
  // unless each address is wanted: a gmon.out of millions of bins costs
  // a few entries per function, not 200 bytes per bin.
  if (!options_.per_address && !out_.samples.empty()) {
    SymbolizedSample& last = out_.samples.back();
    if (last.mapping == s.mapping && same_symbol(last.symbol, s.symbol) &&
        (!options_.lines || (last.line.line == s.line.line && last.line.file == s.line.file))) {
      out_.saturated |= format::saturating_add(last.count, s.count);
      format::saturating_add(last.observations, s.observations);
      return;
    }
  }
  out_.samples.push_back(std::move(s));
}

SymbolizedProfile LeafPass::take() {
  if (options_.source_functions && !options_.lines) {
    const std::vector<std::string> hottest = hottest_functions(out_, options_.source_functions);
    const std::set<std::string> wanted(hottest.begin(), hottest.end());
    for (SymbolizedSample& s : out_.samples)
      if ((s.symbol.known || s.symbol.from_profile) && wanted.contains(s.symbol.function + '\0' + s.symbol.object))
        s.line = frames_.symbolizer().source_line(s.mapping, s.symbol);
  }
  if (options_.segments)
    for (const SymbolizedSample& s : out_.samples)
      if (s.mapping && s.symbol.file_address && !out_.segments.contains(s.mapping))
        out_.segments.emplace(s.mapping, frames_.symbolizer().segments(*s.mapping));
  return std::move(out_);
}

std::vector<std::string> hottest_functions(const SymbolizedProfile& symbolized, size_t n) {
  std::map<std::string, uint64_t> totals;
  for (const SymbolizedSample& s : symbolized.samples)
    if (s.symbol.known || s.symbol.from_profile)
      format::saturating_add(totals[s.symbol.function + '\0' + s.symbol.object], s.count);
  std::vector<std::pair<std::string, uint64_t>> order(totals.begin(), totals.end());
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  if (order.size() > n) order.resize(n);
  std::vector<std::string> out;
  for (auto& [key, total] : order) out.push_back(std::move(key));
  return out;
}

SymbolizedProfile symbolize_leaves(const format::Profile& profile, ElfFrameSymbolizer& frames,
                                   const LeafOptions& options) {
  LeafPass pass(profile, frames, options);
  // Every reader and merge_profiles leave the samples sorted by address
  // (several at one address: other stacks or processes, summed here, since
  // every view of this profile is flat: the leaf); anything else is sorted
  // in a copy first.
  if (sorted_by_address(profile.samples)) {
    for (const format::Sample& sample : profile.samples) pass.add(sample);
    return pass.take();
  }
  std::vector<format::Sample> sorted = profile.samples;
  const bool saturated = format::coalesce_samples(&sorted);
  for (const format::Sample& sample : sorted) pass.add(sample);
  SymbolizedProfile out = pass.take();
  out.saturated |= saturated;
  return out;
}

SymbolizedProfile symbolize_profile(const format::Profile& profile, Symbolizer& symbolizer, bool with_lines,
                                    bool per_address) {
  ElfFrameSymbolizer frames(symbolizer);
  return symbolize_leaves(profile, frames, {.lines = with_lines, .per_address = per_address});
}

void warn_saturated() {
  std::fprintf(stderr,
               "profil: warning: sample counts add up to more than 2^64-1; sums are shown saturated at "
               "18446744073709551615\n");
}

namespace {

// The stacks a view of options reads (stacks_for_report).
StackOptions stack_options(const ReportOptions& options) {
  StackOptions stack_options;
  stack_options.lines = options.view == View::line;
  stack_options.inline_frames = options.inline_frames && options.view != View::object;
  stack_options.roots = options.view == View::process                         ? StackRoots::process
                        : options.view == View::thread || options.thread_roots ? StackRoots::thread
                                                                               : StackRoots::none;
  return stack_options;
}

// --focus, --ignore and --hide applied to set.
std::shared_ptr<const StackSet> filtered(StackSet set, const ReportOptions& options) {
  if (!options.focus && !options.ignore && !options.hide) return std::make_shared<const StackSet>(std::move(set));
  StackFilter filter;
  filter.focus = options.focus ? &*options.focus : nullptr;
  filter.ignore = options.ignore ? &*options.ignore : nullptr;
  filter.hide = options.hide ? &*options.hide : nullptr;
  filter.match_objects = options.view == View::object;
  return std::make_shared<const StackSet>(filter_stacks(set, filter));
}

}  // namespace

std::shared_ptr<const StackSet> stacks_for_report(const format::Profile& profile, FrameSymbolizer& symbolizer,
                                                  const ReportOptions& options) {
  return filtered(build_stacks(profile, symbolizer, stack_options(options)), options);
}

Model build_model(const format::Profile& profile, Symbolizer& symbolizer, const ReportOptions& options,
                  const ModelNeeds& needs) {
  return std::move(build_models({&profile}, symbolizer, options, needs).front());
}

std::vector<Model> build_models(const std::vector<const format::Profile*>& profiles, Symbolizer& symbolizer,
                                const ReportOptions& options, const ModelNeeds& needs) {
  const bool address = options.view == View::address;
  const LeafOptions leaves{.lines = options.view == View::line,
                           .source_functions = needs.sources ? kSourceFunctions : 0,
                           .per_address = address || needs.per_address,
                           .segments = needs.sources};
  const bool stacks = !address || needs.stacks;
  // The leaves' objects are opened first, in the leaves' order, before any
  // caller's: the order the report has always read them in, and said the
  // warnings of those it could not read.
  for (const format::Profile* profile : profiles) {
    const auto mappings = mappings_by_start(*profile);
    std::vector<uint64_t> unsorted;
    if (!sorted_by_address(profile->samples)) {
      for (const format::Sample& sample : profile->samples)
        if (sample.count) unsorted.push_back(sample.address);
      std::sort(unsorted.begin(), unsorted.end());
    }
    const format::Mapping* opened = nullptr;
    uint64_t ignored;
    auto open = [&](uint64_t address) {
      const format::Mapping* mapping = mapping_of(*profile, mappings, address);
      if (mapping && mapping != opened) symbolizer.file_address(*mapping, mapping->start, &ignored);
      if (mapping) opened = mapping;
    };
    for (const format::Sample& sample : profile->samples)
      if (sample.count && unsorted.empty()) open(sample.address);
    for (uint64_t address : unsorted) open(address);
  }
  std::vector<Model> models(profiles.size());
  for (size_t i = 0; i < profiles.size(); ++i) {
    const format::Profile& profile = *profiles[i];
    ElfFrameSymbolizer frames(symbolizer);
    if (!stacks || profile.stacks.empty() || !sorted_by_address(profile.samples)) {
      // The leaves, then the stacks, each leaf named by both: unsorted
      // samples (no reader leaves them so) take a sorted copy first; and a
      // profile without callers (gmon.out, profraw, --no-stacks) grows its
      // two tables apart: interleaved, a million locations
      // (report_hostile_test) took 5 % more memory, past its bound.
      models[i].symbolized = symbolize_leaves(profile, frames, leaves);
      if (stacks) models[i].stacks = stacks_for_report(profile, frames, options);
      if (needs.timeline)
        models[i].timeline = std::make_shared<const Timeline>(build_timeline(profile, frames, stack_options(options)));
      continue;
    }
    // The one pass: each sample's leaf named once, for the leaves and then
    // for its stack.
    LeafPass leaf_pass(profile, frames, leaves);
    StackBuilder stack_builder(profile, frames, stack_options(options));
    for (const format::Sample& sample : profile.samples) {
      leaf_pass.add(sample);
      stack_builder.add(sample);
    }
    models[i].symbolized = leaf_pass.take();
    models[i].stacks = filtered(stack_builder.take(), options);
    if (needs.timeline)
      models[i].timeline = std::make_shared<const Timeline>(build_timeline(profile, frames, stack_options(options)));
  }
  return models;
}

}  // namespace profiling::report
