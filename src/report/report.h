// A flat profile: symbolized samples grouped into rows (by function, source
// line, object or instruction address), each with its share of all samples
// and the 95 % Wilson score interval of that share — the samples are a
// binomial draw from the program's time, so a share of k in n has an error
// (E. B. Wilson, "Probable inference...", JASA 22, 1927).
#ifndef PROFIL_REPORT_REPORT_H
#define PROFIL_REPORT_REPORT_H

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "format/profile.h"
#include "report/model.h"
#include "report/symbolizer.h"

namespace re2 {
class RE2;
}

namespace profiling::report {

// thread and process (issue 22): a row per thread ("name tid") or process
// ("name pid") with all its samples, from the stacks' roots.
enum class View { function, line, object, address, thread, process };
const char* view_name(View view);
// "function", "line", "object", "address", "thread", "process"; false for
// anything else.
bool parse_view(const std::string& text, View* view);

// The rows' order (--sort, issue 35): self samples (the default: hottest
// first, then by total), total samples (a frame that only calls, such as
// Python's py:: frames under -X perf, among its callees' rows), or name
// (function, then object; in the object view the object; in the line view
// file and line next). Ties keep name order.
enum class RowOrder { self, total, name };
const char* row_order_name(RowOrder order);
// "self", "total", "name"; false for anything else.
bool parse_row_order(const std::string& text, RowOrder* order);

struct Interval {
  double low = 0, high = 0;  // percent
};
// The 95 % Wilson score interval of k successes in n trials, in percent.
Interval wilson_interval(uint64_t k, uint64_t n, double z = 1.959963984540054);
// The same of a share p (0..1) estimated from `draws` independent draws
// (not necessarily whole).
Interval wilson_share_interval(double p, double draws, double z = 1.959963984540054);
// The 95 % interval of a weighted share: count of total weighted samples,
// taken in `observations` of total_observations draws (signals or ring
// records; issue 22). Above the kernel tick one signal of the cpu clock
// counts for several periods: the share is count / total, but its noise is
// that of the draws. The draws the interval uses are the share's variance
// by the delta method for a ratio of weighted sums, each draw of a row
// weighing its row's mean weight and each other draw the others' mean:
//   var = [(1-p)^2 c^2/k + p^2 (C-c)^2/(n-k)] / C^2,  draws = p(1-p)/var,
// which is n when every draw weighs the same (16 periods each at 4 kHz on
// a 250 Hz kernel: an interval 4x as wide as one that takes the 16n counts
// for draws). total_observations 0 (a file without them): wilson_interval
// of the counts, as before.
Interval share_interval(uint64_t count, uint64_t observations, uint64_t total, uint64_t total_observations);
// The variance of that share (0..1 scale) as share_interval takes it:
// p(1-p)/total without observations.
double share_variance(uint64_t count, uint64_t observations, uint64_t total, uint64_t total_observations);

struct Row {
  uint64_t samples = 0;
  double percent = 0;
  Interval interval;
  std::string function;     // empty in the object view
  std::string object;       // basename of the object
  std::string object_path;  // as the mapping names it
  std::string file;         // line view: source file
  int line = 0;             // line view: source line (0 unknown)
  uint64_t address = 0;     // address view: link-time address in the object
  std::string instruction;  // address view: disassembled instruction
  // Samples whose stack holds the row at least once (the function and all
  // it called: pprof's "cum"); percent of all samples. Rows by function
  // count inlined frames as functions of their own.
  uint64_t cumulative_samples = 0;
  double cumulative_percent = 0;
  std::string raw_function;  // as the symbol table spells it (symbol version kept)
  // Thread and process views: which (tid 0 in the process view), and the
  // name the profile gives it ("" unnamed).
  int32_t tid = 0, pid = 0;
  std::string task_name;
  // The draws (signals or ring records) behind samples; interval is
  // share_interval of them. 0 when the profile has no observations.
  uint64_t observations = 0;
};

struct Summary {
  uint64_t samples = 0;     // in all files
  uint64_t period_ns = 0;   // CPU time one sample stands for
  double rate_hz = 0;       // 1e9 / period_ns
  double cpu_seconds = 0;   // samples * period
  double wall_seconds = 0;  // duration of the profiles, 0 when unknown
  uint64_t dropped = 0;
  // Samples taken in profil's own code (its handler, its dump), left out of
  // samples and every row (format::Profile::own_samples).
  uint64_t own_samples = 0;
  std::string clock;
  // The event sampled, when not time (format::Profile::event, issue 33):
  // samples stand for event_period events each, and period_ns is 0.
  std::string event;
  uint64_t event_period = 0;
  std::string program;
  std::vector<std::string> files;
  size_t objects = 0;       // distinct objects sampled
  // The draws (signals or ring records) behind samples; 0 when the files
  // do not record them (issue 22).
  uint64_t observations = 0;
};

// The share of profil's own samples in the samples and them: 0..100.
double own_percent(const Summary& s);

// A --focus pattern, matched anywhere in a name (RE2 syntax: Perl-like,
// without backreferences). RE2 runs in time linear in the name and without
// recursion, so no name in a profile can crash the report; std::regex
// recursed once per character and overflowed the stack on long names
// (issue 11).
class FocusPattern {
 public:
  // Throws std::invalid_argument with RE2's reason when pattern is not valid.
  explicit FocusPattern(const std::string& pattern);
  bool found_in(const std::string& text) const;

 private:
  std::shared_ptr<const re2::RE2> re_;
};

struct ReportOptions {
  View view = View::function;
  RowOrder sort = RowOrder::self;  // applied before top and min_percent
  size_t top = 0;            // 0: all rows
  double min_percent = 0;    // rows below are left out
  std::optional<FocusPattern> focus;  // rows whose function (or object in the object view) matches
  std::string focus_text;
  std::string objdump = "objdump";  // for the address view
  bool folded_objects = false;      // folded stacks: each frame as object`function
  // Stack filters (stacks.h StackFilter): --ignore drops the samples whose
  // stack has a matching frame, --hide removes matching frames; --focus
  // keeps the samples whose stack has one.
  std::optional<FocusPattern> ignore, hide;
  // --threads: each stack's thread as its root (tree, folded, flame graph).
  bool thread_roots = false;
  // --no-inlines (pprof's -noinlines): each address is the function the
  // symbol table names, at its own line there; inlined functions are not
  // frames (their samples are their outermost caller's).
  bool inline_frames = true;
};

struct Report {
  View view = View::function;
  // The stacks after --focus/--ignore/--hide, built once (model.h) and read
  // by every view of stacks (folded, tree, flame graph); in the address
  // view only when a view of stacks was asked for (ModelNeeds::stacks).
  std::shared_ptr<const StackSet> stacks;
  // Each thread's samples in time order, when the format reads them
  // (ModelNeeds::timeline: speedscope, the HTML page).
  std::shared_ptr<const Timeline> timeline;
  ReportOptions options;  // as the report was built (the folded stacks apply them too)
  Summary summary;
  std::vector<Row> rows;  // in options.sort's order, after top/min-percent/focus
  size_t rows_before_filter = 0;
  uint64_t samples_shown = 0;
};

Summary summarize(const SymbolizedProfile& symbolized, const std::vector<std::string>& files);
// Rows of the leaves alone (cumulative = self), filtered row by row; with
// stacks (model.h), the function, line and object views' rows come from
// them: inline frames, cumulative samples, and --focus/--ignore/--hide
// applied to whole stacks. The address view's rows are always its leaves.
Report build_report(const SymbolizedProfile& symbolized, const ReportOptions& options,
                    const std::vector<std::string>& files, std::shared_ptr<const StackSet> stacks = nullptr);

// The instructions of [start, end) of an object, disassembled by objdump(1)
// as perf annotate does: link-time address -> instruction text.
std::vector<std::pair<uint64_t, std::string>> disassemble(const std::string& objdump, const std::string& file,
                                                          uint64_t start, uint64_t end);

}  // namespace profiling::report

#endif  // PROFIL_REPORT_REPORT_H
