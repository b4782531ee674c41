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
#include <string>
#include <string_view>
#include <vector>

#include "format/profile.h"
#include "report/symbolizer.h"

namespace profiling::report {

class FocusPattern;  // report.h

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
// runtime address. Today's ELF/DWARF code answers (ElfFrameSymbolizer); the
// symbols issue after 22 puts elfutils' libdwfl behind the same interface.
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

// Today's symbolizer (ELF symbol tables, DWARF lines and inlined-subroutine
// scopes from each unit's scope tree, symbolizer.h) behind FrameSymbolizer. Holds a
// reference: symbolizer must outlive it.
class ElfFrameSymbolizer final : public FrameSymbolizer {
 public:
  explicit ElfFrameSymbolizer(Symbolizer& symbolizer) : symbolizer_(symbolizer) {}
  std::vector<StackFrame> frames_at(const format::Mapping* mapping, uint64_t address,
                                    const std::vector<format::Frame>* carried, bool lines, bool inlines) override;

 private:
  Symbolizer& symbolizer_;
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
// A thread root's label: "name tid" ("worker 4242"); "thread 4242" when
// the profile does not name it; "[unknown thread]" for samples of no known
// thread (files before threads were recorded, gmon).
std::string thread_label(const std::string& name, int32_t tid);
// A process root's label: "name pid"; "[unknown process]" for pid 0.
std::string process_label(const std::string& name, int64_t pid);

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
  friend StackSet build_stacks(const format::Profile&, FrameSymbolizer&, const StackOptions&);
  friend StackSet filter_stacks(const StackSet&, const StackFilter&);
  friend class StackSetBuilder;

  std::vector<StackFrame> frames_;
  std::vector<Stack> stacks_;
  uint64_t total_ = 0, kept_ = 0, total_observations_ = 0;
  bool saturated_ = false;
};

// The profile's samples as stacks: each distinct address symbolized once,
// each distinct caller chain named once. A sample without callers (gmon,
// --no-stacks) is its leaf's frames alone.
StackSet build_stacks(const format::Profile& profile, FrameSymbolizer& symbolizer, const StackOptions& options = {});
// The stacks the filter keeps (total() unchanged). Hide is applied first,
// then ignore and focus on what is left, as pprof does.
StackSet filter_stacks(const StackSet& set, const StackFilter& filter);

// A frame as folded stacks and the tree print it: the function, with
// " (inline)" after an inlined one (pprof's mark).
std::string frame_label(const StackFrame& frame);
// "name@@VERSION" or "name@VERSION" -> "name"; other names as they are.
std::string drop_symbol_version(std::string_view name);
// A C++ name shortened for a text column of `width` code points, as pprof
// does: template arguments and parameter lists elided ("std::map<...>::find(...)"
// -> "std::map::find"), then, if still too wide, its start cut to "…".
// Names that fit are returned as they are.
std::string shorten_name(const std::string& name, size_t width);

// --callers/--callees: each function whose name matches, with the samples
// through it (cumulative) and its self samples, and each caller (or callee)
// with the samples on that edge; an edge counts once per stack.
struct CallEdge {
  std::string function, object;  // the caller or callee
  bool inlined = false;          // the edge is an inlining, not a call
  uint64_t samples = 0;
  double share = 0;              // percent of the function's cumulative samples
};
struct CallRelations {
  std::string function, object;
  uint64_t cumulative = 0, self = 0;
  std::vector<CallEdge> callers, callees;  // most samples first
};
// Functions are matched by name (frames of one function and object are one,
// inlined or not); most cumulative samples first.
std::vector<CallRelations> call_relations(const StackSet& set, const FocusPattern& pattern);

}  // namespace profiling::report

#endif  // PROFIL_REPORT_STACKS_H
