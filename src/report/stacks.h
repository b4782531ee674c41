// The report side's one stack model (issue 22): every sample's stack
// symbolized once into source-level frames, root first, inlined functions
// as frames of their own, and identical stacks merged with their counts
// summed. Every view that looks at stacks (folded, tree, flame graph,
// callers/callees, cumulative columns, diff) reads this one value, so each
// shows the same frames under the same names.
//
// Modelled on pprof's internal/report/stacks.go (a StackSet of stacks that
// index a table of sources), with what pprof's views share: frames are
// interned once, a stack is a short vector of frame ids.
//
// API kept stable for the flame graph (src/report/html.cc and its data file):
//   const StackSet& set = *report.stacks;          // built by cmd_report
//   for (const Stack& s : set.stacks())            // root first
//     for (FrameId id : s.frames) set.frames()[id].function ...
//   frame_label(set.frames()[id])                   // "name (inline)" etc.
#ifndef PROFIL_REPORT_STACKS_H
#define PROFIL_REPORT_STACKS_H

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "format/profile.h"
#include "report/frame_names.h"
#include "report/symbolizer.h"  // kUnknownFunction

namespace profiling::report {

class FocusPattern;      // report.h
class StackSetBuilder;   // stacks.cc: interns a set's frames and stacks

// One source-level frame of a stack.
struct StackFrame {
  // What views show: demangled, symbol version dropped
  // ("__libc_start_main@@GLIBC_2.34" -> "__libc_start_main");
  // kUnknownFunction when nothing names the address; format::kTruncatedFrame
  // for the root of a stack whose unwind stopped early.
  std::string function;
  // As the symbol table or DWARF spells it (demangled, version kept): JSON's
  // raw name.
  std::string raw_function;
  // The object's path as the mapping names it; "[unknown]" outside every
  // mapping; empty for the [truncated] root.
  std::string object;
  // Source position, only when the set was built with StackOptions::lines:
  // the leaf's line from the line table, a caller's the line of its call,
  // an inlined frame's caller the line it was inlined at. "" and 0 unknown.
  std::string file;
  int line = 0;
  // Inlined into the frame before it in the stack (its caller): the two
  // share one machine address.
  bool inlined = false;
  // Not code: the root a stack gets for its thread or process
  // (StackOptions::roots): function is its label (thread_label,
  // process_label), raw_function the bare name ("" unnamed), object
  // kThreadObject or kProcessObject, and tid/pid say which (tid 0 for a
  // process root).
  bool task = false;
  int32_t tid = 0, pid = 0;

  friend bool operator==(const StackFrame&, const StackFrame&) = default;
};

// What the stack model asks of a symbolizer: every source-level frame at a
// runtime address. The ELF/DWARF symbolizer answers (model.h
// ElfFrameSymbolizer); tests answer from a table.
class FrameSymbolizer {
 public:
  virtual ~FrameSymbolizer() = default;
  // The frames at address, innermost first: the functions inlined there
  // (inlined = true), then the function the symbol table names. Never
  // empty: an address nothing names is one [unknown] frame in its object.
  // mapping may be nullptr (outside every mapping); carried: the frames the
  // profile file named the address with (format::Profile::frames_for), used
  // where no symbol table can name it. lines: fill file and line.
  // inlines false: the outermost frame alone (the function the symbol
  // table names, at the line it is at there, as pprof's -noinlines), so
  // that no inline scopes need be read where no line is wanted either.
  virtual std::vector<StackFrame> frames_at(const format::Mapping* mapping, uint64_t address,
                                            const std::vector<format::Frame>* carried, bool lines,
                                            bool inlines) = 0;
};

// An index in StackSet::frames().
using FrameId = uint32_t;

// One distinct stack and its samples.
struct Stack {
  std::vector<FrameId> frames;  // root first, leaf last; never empty
  uint64_t count = 0;           // samples (stays at 2^64-1 when the sum passed it)
  // The draws behind count (signals or ring records; issue 22); 0 when the
  // profile has none (StackSet::total_observations() 0).
  uint64_t observations = 0;
  // The unwind stopped early: frames[0] is the [truncated] frame (frames[1]
  // under a thread or process root).
  bool truncated = false;
};

// What root each stack gets: none, its thread (--threads, --by thread) or
// its process (--by process).
enum class StackRoots { none, thread, process };

struct StackOptions {
  bool lines = false;          // file and line for every frame (costs a DWARF line lookup per address)
  bool inline_frames = true;   // false: one frame per address, the function the symbol table names
  StackRoots roots = StackRoots::none;
};

// The objects of root frames (StackFrame::task).
inline constexpr const char* kThreadObject = "[thread]";
inline constexpr const char* kProcessObject = "[process]";
// Which stacks and frames a view keeps, as pprof's -focus, -ignore and
// -hide. Each pattern is matched (RE2, anywhere in the text) against the
// frame's function, or its object path with match_objects (--by object).
struct StackFilter {
  const FocusPattern* focus = nullptr;   // keep only stacks with a frame that matches
  const FocusPattern* ignore = nullptr;  // drop stacks with a frame that matches
  const FocusPattern* hide = nullptr;    // remove the frames that match (a stack left empty is dropped)
  bool match_objects = false;
};

class StackSet {
 public:
  // Every distinct frame, by FrameId.
  const std::vector<StackFrame>& frames() const { return frames_; }
  // Every distinct stack (same frames, same truncation), in the order the
  // profile's samples first met them; none has a zero count.
  const std::vector<Stack>& stacks() const { return stacks_; }
  // All samples of the profile, before any filter: the denominator of
  // every percentage, so that shares stay shares of all samples.
  uint64_t total() const { return total_; }
  // Samples in stacks() (total() until a filter dropped some).
  uint64_t kept() const { return kept_; }
  // The draws behind total() (report.h share_interval); 0 when the profile
  // has no observations.
  uint64_t total_observations() const { return total_observations_; }
  bool saturated() const { return saturated_; }

  // Samples of each frame id as the leaf (self), and of the stacks that hold
  // it at least once (cumulative: recursion counts once), by FrameId; or
  // their observations (field &Stack::observations).
  std::vector<uint64_t> self_by_frame(uint64_t Stack::*field = &Stack::count) const;
  std::vector<uint64_t> cumulative_by_frame(uint64_t Stack::*field = &Stack::count) const;

 private:
  friend class StackBuilder;
  friend StackSet filter_stacks(const StackSet&, const StackFilter&);
  friend class StackSetBuilder;

  std::vector<StackFrame> frames_;
  std::vector<Stack> stacks_;
  uint64_t total_ = 0, kept_ = 0, total_observations_ = 0;
  bool saturated_ = false;
};

// Builds a StackSet one sample at a time, so that another pass over the
// samples (model.h's leaves) can walk beside it: each caller address is
// named once and each caller chain once; a leaf is named again only when
// its address differs from the sample before's (samples come sorted by
// address). A sample without callers (gmon, --no-stacks) is its leaf's
// frames alone. Holds references: profile and symbolizer must outlive it.
class StackBuilder {
 public:
  // chains: the table the samples' stack ids name (the timeline's,
  // format::Timeline); profile.stacks when null.
  StackBuilder(const format::Profile& profile, FrameSymbolizer& symbolizer, const StackOptions& options,
               const format::StackTable* chains = nullptr);
  ~StackBuilder();
  // One sample of profile (its samples' order is the order of stacks()):
  // the index in stacks() it was counted in, SIZE_MAX for none (no count).
  size_t add(const format::Sample& sample);
  // The set built so far; the builder is spent.
  StackSet take();

 private:
  // The frames at one address, innermost first, as ids.
  void frames_at(uint64_t address, std::vector<FrameId>* out);
  // A caller chain's frames, root first.
  const std::vector<FrameId>& chain(uint32_t id);
  // A sample's thread or process root, each named once.
  FrameId root_of(const format::Sample& sample);

  const format::Profile& profile_;
  const format::StackTable& table_;
  FrameSymbolizer& symbolizer_;
  StackOptions options_;
  StackSet set_;
  std::unique_ptr<StackSetBuilder> interner_;
  FrameId truncated_ = 0;
  std::vector<const format::Mapping*> mappings_;  // by start
  // Callers are shared by many samples: their frames are kept by address.
  // Leaves are not: a gmon.out has millions of them, in address order,
  // named one after the other.
  std::unordered_map<uint64_t, std::vector<FrameId>> caller_frames_;
  std::vector<std::vector<FrameId>> chains_;
  std::vector<bool> chain_done_;
  std::map<std::pair<int32_t, int32_t>, FrameId> roots_;  // (pid, tid) -> frame
  std::string program_;                                     // the profile's program, file name only
  std::vector<FrameId> leaf_, stack_;
  bool have_leaf_ = false;
  uint64_t leaf_address_ = 0;
};

// The profile's samples as stacks (StackBuilder over every sample).
StackSet build_stacks(const format::Profile& profile, FrameSymbolizer& symbolizer, const StackOptions& options = {});
// The stacks the filter keeps (total() unchanged). Hide is applied first,
// then ignore and focus on what is left, as pprof does.
StackSet filter_stacks(const StackSet& set, const StackFilter& filter);

// A frame as folded stacks and the tree print it: the function, with
// " (inline)" after an inlined one (pprof's mark).
std::string frame_label(const StackFrame& frame);
}  // namespace profiling::report

#endif  // PROFIL_REPORT_STACKS_H
